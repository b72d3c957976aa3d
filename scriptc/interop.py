"""Arrays from other libraries: torch CPU tensors, JAX CPU arrays, and anything exposing DLPack (``__dlpack__``)
or the array interface (``__array_interface__``/``__array_struct__``) is viewed as a NumPy array without copying,
so that writes made by compiled code reach the original object. Nothing here imports torch or JAX: their array
classes are recognised by module and name.
"""

from __future__ import annotations

import numpy as np

# (module prefix, class name) of array classes that mean "an array" in an annotation.
_ARRAY_CLASSES = (("torch", "Tensor"), ("jax", "Array"), ("jaxlib", "ArrayImpl"))


def is_array_class(obj) -> bool:
    """``torch.Tensor``, ``jax.Array``: an annotation naming another library's array class."""
    if not isinstance(obj, type):
        return False
    module = getattr(obj, "__module__", "") or ""
    return any((module == m or module.startswith(m + ".")) and obj.__name__ == name for m, name in _ARRAY_CLASSES)


def is_array_like(arg) -> bool:
    """Whether ``arg`` can be viewed as a NumPy array without a copy (it may still refuse: ``as_array``)."""
    t = type(arg)
    if issubclass(t, (np.generic, int, float, complex)):
        return False
    return hasattr(t, "__dlpack__") or hasattr(arg, "__array_interface__") or hasattr(arg, "__array_struct__")


_GPU_DLPACK_DEVICES = (2, 13)  # DLPack's kDLCUDA and kDLCUDAManaged (kDLCUDAHost, 3, is host memory)


def is_gpu_array(arg) -> bool:
    """A scriptc DeviceArray, or another library's array in GPU memory (CuPy, torch.cuda, JAX on a GPU).

    torch.Tensor and jax.Array declare ``__cuda_array_interface__`` on the class and raise AttributeError for
    an array on the CPU, so the class alone does not tell: the array's DLPack device does."""
    t = type(arg)
    if getattr(t, "_scriptc_device", False):
        return True
    if issubclass(t, np.ndarray) or not hasattr(t, "__cuda_array_interface__"):
        return False
    if hasattr(t, "__dlpack_device__"):
        try:
            return arg.__dlpack_device__()[0] in _GPU_DLPACK_DEVICES
        except Exception:  # noqa: BLE001 - an exporter that cannot say: ask the array interface below
            pass
    try:
        arg.__cuda_array_interface__
    except AttributeError:
        return False
    return True


def as_array(fname: str, pname: str, arg) -> np.ndarray | None:
    """A zero-copy NumPy view of ``arg`` (None: ``arg`` exposes no array protocol). A TypeError naming the
    parameter when it cannot be viewed without a copy (a GPU tensor, a tensor that requires grad)."""
    if isinstance(arg, np.ndarray):
        return arg
    if isinstance(arg, (np.generic, int, float, complex)):  # scalars export DLPack too, but are no arrays
        return None
    try:
        if hasattr(type(arg), "__dlpack__"):
            return np.from_dlpack(arg)
        if hasattr(arg, "__array_interface__") or hasattr(arg, "__array_struct__"):
            return np.asarray(arg)
    except Exception as e:  # noqa: BLE001 - whatever the exporter raises, the user's fix is the same
        raise TypeError(
            f"{fname}() argument '{pname}': cannot view {type(arg).__name__} as a NumPy array "
            f"without copying ({type(e).__name__}: {e}); pass a CPU array that does not require "
            f"grad, or convert it first (e.g. np.asarray(x))"
        ) from None
    return None


__all__ = ["as_array", "is_array_class", "is_array_like", "is_gpu_array"]
