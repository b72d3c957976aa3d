"""``scriptc.cuda``: device arrays and GPU execution of scripted functions.

    scriptc.cuda.use_emulator()            # or SCRIPTC_CUDA=emulate: no GPU needed
    dx = scriptc.cuda.to_device(x)         # a DeviceArray
    dy = f(dx, 2.0)                        # host control flow on the CPU, element-wise groups as kernels
    y = dy.copy_to_host()

With the emulator, device arrays live in host memory and each kernel runs by compiling the LLVM module its PTX is
made from for the host CPU and walking the whole grid (``backend/nvptx/emulator.py``). Launching on a real GPU
(through NVIDIA's cuda-bindings) is not implemented yet: ``is_available()`` tells whether a driver and a device
are present; ``to_device`` without the emulator raises a RuntimeError saying so.
"""
from __future__ import annotations

import os

import numpy as np

from .backend.nvptx.codegen import GpuUnsupported

_state = {"emulate": os.environ.get("SCRIPTC_CUDA") == "emulate", "block": int(os.environ.get(
    "SCRIPTC_CUDA_BLOCK", "128")), "max_blocks": 1024}


def use_emulator(on: bool = True) -> None:
    """Run kernels in the grid emulator (``SCRIPTC_CUDA=emulate`` does the same at import)."""
    _state["emulate"] = bool(on)


def set_block_size(threads: int) -> None:
    """Threads per block of every launch (default 128, ``SCRIPTC_CUDA_BLOCK``); grids are grid-stride loops, so
    any size works."""
    if threads < 1 or threads > 1024:
        raise ValueError("a block has 1 to 1024 threads")
    _state["block"] = int(threads)


def is_available() -> bool:
    """Whether a CUDA driver and at least one device are present (through NVIDIA's cuda-bindings)."""
    try:
        from cuda.bindings import driver  # type: ignore
    except ImportError:
        return False
    try:
        err, = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:  # noqa: BLE001 -- a broken driver installation is "not available"
        return False


def synchronize() -> None:
    """Wait for every launched kernel (the emulator runs them synchronously)."""


class EmulatorDevice:
    """Device memory in host memory; kernels compiled for the host and run over the grid."""

    name = "emulator"

    def empty(self, shape, dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def load(self, km):
        from .backend.nvptx.emulator import EmulatedModule
        return EmulatedModule(km)

    def launch(self, module, kernel: str, n: int, args) -> None:
        threads = _state["block"]
        blocks = max(1, min(-(-n // threads), _state["max_blocks"]))
        module.launch(kernel, blocks, threads, *args)


def _device():
    if _state["emulate"]:
        return EmulatorDevice()
    raise RuntimeError("running on a GPU through the CUDA driver is not implemented yet; use the grid emulator: "
                       "scriptc.cuda.use_emulator() or SCRIPTC_CUDA=emulate")


class DeviceArray:
    """An array in device memory: ``shape``, ``dtype``, ``strides``, ``copy_to_host()``."""

    _scriptc_device = True      # scripted functions called with one run on its device

    def __init__(self):
        raise TypeError("make device arrays with scriptc.cuda.to_device or scriptc.cuda.device_array")

    @classmethod
    def _wrap(cls, buffer: np.ndarray, device) -> "DeviceArray":
        self = object.__new__(cls)
        self._buffer, self._device = buffer, device
        return self

    shape = property(lambda self: self._buffer.shape)
    dtype = property(lambda self: self._buffer.dtype)
    strides = property(lambda self: self._buffer.strides)
    ndim = property(lambda self: self._buffer.ndim)
    size = property(lambda self: self._buffer.size)
    pointer = property(lambda self: self._buffer.__array_interface__["data"][0])

    def __len__(self):
        return len(self._buffer)

    def copy_to_host(self) -> np.ndarray:
        return self._buffer.copy()

    def __getitem__(self, index):
        """A synchronous copy of one element (a scalar read by host code)."""
        value = self._buffer[index]
        if isinstance(value, np.ndarray):
            raise GpuUnsupported("slicing a device array on the host is not supported: copy_to_host() first")
        return value

    def __array__(self, *args, **kwargs):
        raise TypeError("a DeviceArray is not a host array: call copy_to_host()")

    def __repr__(self):
        return f"<DeviceArray {self.dtype} {self.shape} on {self._device.name}>"


def to_device(a) -> DeviceArray:
    """A device copy of a host array."""
    device = _device()
    a = np.asarray(a)
    buffer = device.empty(a.shape, a.dtype)
    buffer[...] = a
    return DeviceArray._wrap(buffer, device)


def device_array(shape, dtype=np.float64) -> DeviceArray:
    """An uninitialized device array."""
    device = _device()
    return DeviceArray._wrap(device.empty(shape, np.dtype(dtype)), device)


__all__ = ["DeviceArray", "GpuUnsupported", "device_array", "is_available", "set_block_size", "synchronize",
           "to_device", "use_emulator"]
