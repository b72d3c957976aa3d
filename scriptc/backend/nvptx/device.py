"""Device arrays and the device they live on (a GPU through the CUDA driver, or the grid emulator): what
``scriptc.cuda`` offers users, and what the host-side executor allocates and launches with."""

from __future__ import annotations

import ctypes
import os

import numpy as np

from ...interop import is_gpu_array
from .dlpack import dlpack_device, to_capsule
from .groups import GpuUnsupported

_state = {
    "emulate": os.environ.get("SCRIPTC_CUDA") == "emulate",
    "block": int(os.environ.get("SCRIPTC_CUDA_BLOCK", "256")),
    "max_blocks": 0,
    "cuda": None,
}


def use_emulator(on: bool = True) -> None:
    """Run kernels in the grid emulator (``SCRIPTC_CUDA=emulate`` does the same at import)."""
    _state["emulate"] = bool(on)


def set_block_size(threads: int, max_blocks: int = 0) -> None:
    """Threads per block of every launch (default 256, ``SCRIPTC_CUDA_BLOCK``), and at most ``max_blocks`` blocks
    (0: 32 per multiprocessor on a GPU, 1024 in the emulator); kernels are grid-stride loops, so any size works."""
    if threads < 1 or threads > 1024:
        raise ValueError("a block has 1 to 1024 threads")
    _state["block"], _state["max_blocks"] = int(threads), int(max_blocks)


def is_available() -> bool:
    """Whether a CUDA driver and at least one device are present (through NVIDIA's cuda-bindings)."""
    try:
        from cuda.bindings import driver  # type: ignore
    except ImportError:
        return False
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:  # noqa: BLE001 -- no libcuda, or a broken installation: "not available"
        return False


def synchronize() -> None:
    """Wait until every kernel launched so far has finished (the emulator runs them synchronously)."""
    if _state["cuda"] is not None:
        _state["cuda"].synchronize()


def empty_cache() -> None:
    """Give the device memory the caching allocator holds for reuse back to the driver."""
    if _state["cuda"] is not None:
        _state["cuda"].allocator.empty_cache()


def memory_stats() -> dict:
    """Bytes allocated (held by live arrays) and cached (free, kept for reuse), blocks reused, driver calls."""
    return dict(_state["cuda"].allocator.stats) if _state["cuda"] is not None else {}


class _HostBlock:
    """Emulated device memory: a host buffer."""

    def __init__(self, nbytes: int):
        self.buffer = np.empty(max(nbytes, 1), np.uint8)
        self.pointer = self.buffer.ctypes.data


class EmulatorDevice:
    """Device memory in host memory; kernels compiled for the host and run over the grid."""

    name = "emulator"

    def allocate(self, nbytes: int) -> _HostBlock:
        return _HostBlock(nbytes)

    def copy_from_host(self, pointer: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        ctypes.memmove(pointer, host.ctypes.data, host.nbytes)

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        ctypes.memmove(host.ctypes.data, pointer, host.nbytes)

    def copy_on_device(self, dst: int, src: int, nbytes: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def synchronize(self) -> None:
        pass

    def load(self, km):
        from .emulator import EmulatedModule  # (the emulator loads LLVM: imported when used)

        return EmulatedModule(km)

    def blocks(self, n: int, threads: int, max_blocks: int) -> int:
        return max(1, min(-(-n // threads), max_blocks or 1024))

    def launch(self, module, kernel, blocks: int, threads: int, args, finish: bool = False) -> None:
        module.launch(kernel.finish if finish else kernel.name, blocks, threads, args)


_EMULATOR = EmulatorDevice()


def current_device():
    """The device new arrays go to: the emulator when it is on, else the GPU (a RuntimeError if there is none)."""
    if _state["emulate"]:
        return _EMULATOR
    if _state["cuda"] is None:
        if not is_available():
            raise RuntimeError(
                "no CUDA GPU and driver found (cuda-bindings: pip install scriptc[cuda]); "
                "use the grid emulator: scriptc.cuda.use_emulator() or SCRIPTC_CUDA=emulate"
            )
        from .driver import CudaDevice  # (the driver needs cuda-bindings: imported when used)

        _state["cuda"] = CudaDevice()
    return _state["cuda"]


def launch_config() -> tuple[int, int]:
    return _state["block"], _state["max_blocks"]


class DeviceArray:
    """An array in device memory: ``shape``, ``dtype``, ``strides`` (bytes), ``copy_to_host()``; on a GPU also
    ``__cuda_array_interface__`` and ``__dlpack__``."""

    _scriptc_device = True  # scripted functions called with one run on its device

    def __init__(self):
        raise TypeError("make device arrays with scriptc.cuda.to_device or scriptc.cuda.device_array")

    @classmethod
    def _make(cls, device, shape, dtype, strides=None, pointer=None, owner=None) -> "DeviceArray":
        """An array of ``device``: new memory, or ``pointer`` kept valid by ``owner``; strides None: C order."""
        self = object.__new__(cls)
        self.shape, self.dtype, self._device = tuple(int(d) for d in shape), np.dtype(dtype), device
        contiguous = _contiguous_strides(self.shape, self.dtype.itemsize)
        self.strides = contiguous if strides is None else tuple(int(s) for s in strides)
        if pointer is None:
            owner = device.allocate(self.size * self.dtype.itemsize)
            pointer = owner.pointer
        self.pointer, self._owner = int(pointer), owner
        return self

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    device = property(lambda self: self._device.name)

    @property
    def is_c_contiguous(self) -> bool:
        return self.size <= 1 or all(
            s == c
            for d, s, c in zip(self.shape, self.strides, _contiguous_strides(self.shape, self.dtype.itemsize))
            if d != 1
        )

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def copy_to_host(self) -> np.ndarray:
        """A host copy (waits for the kernels that write this array)."""
        if self.is_c_contiguous:
            host = np.empty(self.shape, self.dtype)
            self._device.copy_to_host(host, self.pointer)
            return host
        low = sum(s * (d - 1) for d, s in zip(self.shape, self.strides) if s < 0 and d)
        high = sum(s * (d - 1) for d, s in zip(self.shape, self.strides) if s > 0 and d)
        span = np.empty(high - low + self.dtype.itemsize, np.uint8)
        self._device.copy_to_host(span, self.pointer + low)
        view = np.lib.stride_tricks.as_strided(
            span[-low:].view(self.dtype) if low else span.view(self.dtype), self.shape, self.strides
        )
        return view.copy()

    def _element(self, index) -> int:
        """The address of one element (an integer per dimension, negative from the end), or an error."""
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != self.ndim or not all(isinstance(i, (int, np.integer)) for i in index):
            raise GpuUnsupported(
                "indexing a device array on the host reads or writes one element (an integer "
                "per dimension): copy_to_host() for the rest"
            )
        offset = 0
        for axis, (i, d, s) in enumerate(zip(index, self.shape, self.strides)):
            if not -d <= i < d:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {d}")
            offset += (i % d) * s
        return self.pointer + offset

    def __getitem__(self, index):
        """A synchronous copy of one element to the host (a scalar read by host code)."""
        host = np.empty((), self.dtype)
        self._device.copy_to_host(host, self._element(index))
        return host[()]

    def __setitem__(self, index, value):
        """A synchronous copy of one element to the device, converted as NumPy's item assignment converts it."""
        address = self._element(index)
        host = np.empty((), self.dtype)
        host[()] = value
        self._device.copy_from_host(address, host)

    def __array__(self, *args, **kwargs):
        raise TypeError("a DeviceArray is not a host array: call copy_to_host()")

    @property
    def __cuda_array_interface__(self) -> dict:
        if self._device.name != "cuda":
            raise AttributeError("an emulated device array lives in host memory: it has no CUDA array interface")
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.pointer, False),
            "version": 3,
            "strides": None if self.is_c_contiguous else self.strides,
            "stream": 1,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack_device(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return to_capsule(self)

    def __repr__(self):
        return f"<DeviceArray {self.dtype} {self.shape} on {self._device.name}>"


def _contiguous_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def is_device_array(a) -> bool:
    """A DeviceArray, or a GPU array of another library (``__cuda_array_interface__``: CuPy, torch.cuda)."""
    return is_gpu_array(a)


def as_device_array(a) -> DeviceArray:
    """``a`` itself if it is a DeviceArray; a view (no copy) of another library's GPU array."""
    if isinstance(a, DeviceArray):
        return a
    cai = a.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise TypeError("masked CUDA arrays are not supported")
    device = current_device()
    if device.name != "cuda":
        raise RuntimeError("a GPU array was passed while the emulator is on: scriptc.cuda.use_emulator(False)")
    return DeviceArray._make(
        device, cai["shape"], np.dtype(cai["typestr"]), cai.get("strides"), cai["data"][0], owner=a
    )


def to_device(a) -> DeviceArray:
    """A device copy of a host array; another library's GPU array is wrapped without a copy."""
    if is_device_array(a):
        return as_device_array(a)
    a = np.ascontiguousarray(a)
    d = DeviceArray._make(current_device(), a.shape, a.dtype)
    d._device.copy_from_host(d.pointer, a)
    return d


def device_array(shape, dtype=np.float64) -> DeviceArray:
    """An uninitialized device array."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return DeviceArray._make(current_device(), shape, np.dtype(dtype))


__all__ = [
    "DeviceArray",
    "GpuUnsupported",
    "as_device_array",
    "device_array",
    "empty_cache",
    "is_available",
    "is_device_array",
    "memory_stats",
    "set_block_size",
    "synchronize",
    "to_device",
    "use_emulator",
]
