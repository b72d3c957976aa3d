"""Calls of a scripted function with device arrays (``scriptc.cuda``; CuPy and torch.cuda arrays): the host code
runs on the CPU and the array operators as kernels (``backend/nvptx``)."""

from __future__ import annotations

import numpy as np

from .compiled import pipeline
from .errors import user_facing
from .interop import is_gpu_array as _on_device
from .ir.core import Graph


class DeviceCalls:
    """Mixin of ScriptFunction: what it does with device arrays."""

    def _run_on_device(self, args, kwargs):
        """A call with device arrays (``scriptc.cuda``): host code on the CPU, array operators as kernels."""
        # device arrays only: decorating loads no backend (test_import_cost)
        from .backend.nvptx.executor import GpuProgram

        types, values, devices = self._bind_device(args, kwargs)
        device = devices[0]._device
        key = (types, device.name)
        program = self._gpu.get(key)
        if program is None:
            program = self._gpu[key] = GpuProgram(self.gpu_graph_for_types(types), device)
        return program.run(values)

    def _bind_device(self, args, kwargs):
        """Bind arguments some of which are device arrays: binding sees an empty host array of each one's dtype and
        rank. (types, values with the device arrays, the device arrays)."""
        from .cuda import as_device_array  # device arrays only: cuda loads the nvptx backend (and llvmlite)

        devices = {}

        def stand_in(a):
            if _on_device(a):
                a = as_device_array(a)
                stand = np.empty((0,) * a.ndim, a.dtype)
                devices[id(stand)] = a
                return stand
            return a

        types, values = self._bind([stand_in(a) for a in args], {k: stand_in(v) for k, v in kwargs.items()})
        return types, [devices.get(id(v), v) for v in values], list(devices.values())

    def gpu_graph_for_types(self, types: tuple) -> Graph:
        """The optimized graph of a GPU signature: as for the CPU, except that a time loop over whole arrays
        stays a host loop (its body's fusion groups are the kernels) instead of becoming one fused CPU loop, and
        every operator the device runs is a group (a kernel) of its own (``passes/device_groups.py``)."""
        # at the first GPU compile: decorating loads no pass (test_import_cost)
        from .passes.device_groups import outline_for_device

        self.graph_for_types(types, optimize=False)
        graph = pipeline(skip={"time-loop-fusion"}).run(self._compile(types))
        outline_for_device(graph)
        return graph

    @user_facing
    def inspect_ptx(self, *args, arch: str = "sm_80", **kwargs) -> str:
        """The PTX of these arguments' signature (host arrays describe the types: no GPU needed): one
        ``.entry`` per kernel (two for a group with reductions)."""
        # loads the nvptx backend and llvmlite: decorating loads none (test_import_cost)
        from .backend.nvptx import ptx_for_graph

        return ptx_for_graph(self.gpu_graph_for_types(self._bind(args, kwargs)[0]), arch)[0]
