"""The CUDA driver, through NVIDIA's cuda-bindings: the device's primary context, a caching allocator, copies,
PTX modules and kernel launches.

Everything runs on the legacy default stream, which every blocking stream (PyTorch's and CuPy's default streams
included) synchronizes with, so arrays shared with them need no extra synchronization; launches are
asynchronous, and a copy to the host waits for the kernels before it. The primary context is the one PyTorch
and CuPy use too, so device pointers pass between them unchanged.

Memory comes from a caching allocator: a freed block goes back to a free list of its size class (sizes rounded
up to 512 bytes, or to 2 MiB above 1 MiB) and is handed out again before the driver is asked for more;
``empty_cache()`` returns the cached blocks to the driver, as does an allocation that fails for lack of memory.
"""

from __future__ import annotations

import ctypes
import threading
from collections import defaultdict

import numpy as np
from cuda.bindings import driver as cu

from .codegen import GpuUnsupported, Kernel, KernelModule
from .ptx import compile_ptx
from ..llvm.runtime.errors import PAYLOAD_SLOTS

SMALL, LARGE = 512, 2 << 20


class CudaError(RuntimeError):
    """An error the CUDA driver reported, naming what was being done."""


def check(result, what: str):
    """The values of a cuda-bindings call, or a CudaError naming ``what``."""
    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(err)[1]
        text = cu.cuGetErrorString(err)[1]
        raise CudaError(f"{what}: {name.decode() if name else err} ({text.decode() if text else ''})")
    return values[0] if len(values) == 1 else tuple(values)


class Block:
    """Device memory from the allocator; going back to it when the last reference goes."""

    __slots__ = ("pointer", "size", "allocator", "__weakref__")

    def __init__(self, pointer: int, size: int, allocator: "CachingAllocator"):
        self.pointer, self.size, self.allocator = pointer, size, allocator

    def __del__(self):
        try:
            self.allocator.release(self)
        except Exception:  # noqa: BLE001 -- at interpreter exit the driver may already be gone
            pass


class CachingAllocator:
    def __init__(self, device: "CudaDevice"):
        self.device = device
        self.free: dict[int, list[int]] = defaultdict(list)
        self.lock = threading.Lock()
        self.stats = {"allocated": 0, "cached": 0, "reused": 0, "driver_allocations": 0}

    @staticmethod
    def size_class(nbytes: int) -> int:
        unit = SMALL if nbytes <= (1 << 20) else LARGE
        return max(unit, -(-nbytes // unit) * unit)

    def allocate(self, nbytes: int) -> Block:
        size = self.size_class(nbytes)
        with self.lock:
            if self.free[size]:
                self.stats["reused"] += 1
                self.stats["cached"] -= size
                self.stats["allocated"] += size
                return Block(self.free[size].pop(), size, self)
        self.device.bind()
        try:
            pointer = check(cu.cuMemAlloc(size), f"allocating {size} bytes of device memory")
        except CudaError:
            self.empty_cache()
            pointer = check(cu.cuMemAlloc(size), f"allocating {size} bytes of device memory")
        with self.lock:
            self.stats["allocated"] += size
            self.stats["driver_allocations"] += 1
        return Block(int(pointer), size, self)

    def release(self, block: Block) -> None:
        with self.lock:
            self.free[block.size].append(block.pointer)
            self.stats["allocated"] -= block.size
            self.stats["cached"] += block.size

    def empty_cache(self) -> None:
        with self.lock:
            pointers = [p for ps in self.free.values() for p in ps]
            self.free.clear()
            self.stats["cached"] = 0
        self.device.bind()
        check(cu.cuCtxSynchronize(), "synchronizing before freeing cached device memory")
        for p in pointers:
            check(cu.cuMemFree(p), "freeing device memory")


class CudaDevice:
    """One GPU through its primary context."""

    name = "cuda"

    def __init__(self, ordinal: int = 0):
        check(cu.cuInit(0), "initializing the CUDA driver")
        self.handle = check(cu.cuDeviceGet(ordinal), f"opening CUDA device {ordinal}")
        self.ordinal = ordinal
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.handle), "retaining the primary context")
        self._bound = threading.local()
        self.bind()
        attribute = cu.CUdevice_attribute
        major = self.attribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.attribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.arch = f"sm_{major}{minor}"
        self.multiprocessors = self.attribute(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.allocator = CachingAllocator(self)

    def attribute(self, which) -> int:
        return int(check(cu.cuDeviceGetAttribute(which, self.handle), f"reading {which.name}"))

    def bind(self) -> None:
        """Make the context current on this thread (once per thread)."""
        if not getattr(self._bound, "done", False):
            check(cu.cuCtxSetCurrent(self.context), "making the CUDA context current")
            self._bound.done = True

    # -- memory ----------------------------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> Block:
        return self.allocator.allocate(max(nbytes, 1))

    def copy_from_host(self, pointer: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        if host.nbytes:
            self.bind()
            check(cu.cuMemcpyHtoD(pointer, host.ctypes.data, host.nbytes), "copying an array to the device")

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        if host.nbytes:
            self.bind()
            check(cu.cuMemcpyDtoH(host.ctypes.data, pointer, host.nbytes), "copying an array to the host")

    def copy_on_device(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self.bind()
            check(cu.cuMemcpyDtoD(dst, src, nbytes), "copying device memory")

    def synchronize(self) -> None:
        self.bind()
        check(cu.cuCtxSynchronize(), "waiting for the device")

    # -- kernels ---------------------------------------------------------------------------------------------
    def load(self, km: KernelModule) -> "CudaModule":
        return CudaModule(self, km)

    def blocks(self, n: int, threads: int, max_blocks: int) -> int:
        """Blocks of a grid-stride launch over n elements: enough for every element, at most ``max_blocks`` (by
        default 32 per multiprocessor: enough resident warps to cover memory latency)."""
        return max(1, min(-(-n // threads), max_blocks or self.multiprocessors * 32))

    def launch(
        self, module: "CudaModule", kernel: Kernel, blocks: int, threads: int, args, finish: bool = False
    ) -> None:
        module.launch(kernel, blocks, threads, args, finish)


class CudaModule:
    """A kernel module's PTX loaded into the context: its functions and its error flag."""

    def __init__(self, device: CudaDevice, km: KernelModule):
        self.device = device
        self.ptx = compile_ptx(km.llvm_ir(), device.arch)
        device.bind()
        self.module = check(cu.cuModuleLoadData(self.ptx.encode() + b"\0"), f"loading the kernels of {km.prefix}")
        self.functions = {
            name: check(cu.cuModuleGetFunction(self.module, name.encode()), f"finding kernel {name}")
            for k in km.kernels
            for name in (k.name, k.finish)
            if name
        }
        self.error, _ = check(cu.cuModuleGetGlobal(self.module, km.error_symbol.encode()), "finding the error flag")
        self.payload, _ = check(
            cu.cuModuleGetGlobal(self.module, km.payload_symbol.encode()), "finding the error payload"
        )

    def launch(self, kernel: Kernel, blocks: int, threads: int, args, finish: bool = False) -> None:
        name, params = (kernel.finish, kernel.finish_params) if finish else (kernel.name, kernel.params)
        values = [t(a) for t, a in zip(params, args)]
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        self.device.bind()
        check(
            cu.cuLaunchKernel(self.functions[name], blocks, 1, 1, threads, 1, 1, 0, 0, ctypes.addressof(pointers), 0),
            f"launching {name}{_where(kernel)}",
        )

    def take_error(self) -> tuple[int, list[int]]:
        """The error code a kernel thread stored (0: none) and its payload, clearing the flag (synchronous)."""
        code = np.zeros(1, np.int32)
        self.device.copy_to_host(code, int(self.error))
        if not code[0]:
            return 0, []
        payload = np.zeros(PAYLOAD_SLOTS, np.int64)
        self.device.copy_to_host(payload, int(self.payload))
        check(cu.cuMemsetD32(int(self.error), 0, 1), "clearing the kernel error flag")
        return int(code[0]), payload.tolist()


def _where(kernel: Kernel) -> str:
    source = kernel.node.source
    return f" (the fusion group at {source.short()})" if source is not None else ""


__all__ = ["CachingAllocator", "CudaDevice", "CudaError", "GpuUnsupported"]
