"""DLPack export of device arrays (``__dlpack__``/``__dlpack_device__``): ``torch.from_dlpack(d)`` and
``cupy.from_dlpack(d)`` take a scriptc DeviceArray without a copy.

The capsule holds a ``DLManagedTensor`` (the unversioned ABI every consumer accepts) whose manager context keeps
the array alive; the consumer calls its deleter when it is done, or the capsule's destructor does if no consumer
took it. Strides are in elements, as DLPack counts them.
"""

from __future__ import annotations

import ctypes

import numpy as np

KDL_CPU, KDL_CUDA = 1, 2
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


_LIVE: dict[int, tuple] = {}  # address of a DLManagedTensor -> what it points into, until its deleter runs


@DELETER
def _delete(address):
    _LIVE.pop(address, None)


CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# private prototypes: setting argtypes on ctypes.pythonapi's shared function objects would change them for
# every other user in the process
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_capsule_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


@CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    if _capsule_valid(capsule, b"dltensor"):  # never consumed: the deleter is ours to call
        _delete(_capsule_pointer(capsule, b"dltensor"))


def dlpack_device(array) -> tuple[int, int]:
    if array._device.name == "cuda":
        return KDL_CUDA, array._device.ordinal
    return KDL_CPU, 0  # the emulator's device memory is host memory


def to_capsule(array):
    dtype = np.dtype(array.dtype)
    if dtype.kind not in _CODES:
        raise TypeError(f"DLPack has no {dtype} arrays")
    itemsize = dtype.itemsize
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(array.ndim, 1))(*[s // itemsize for s in array.strides])
    kind, ordinal = dlpack_device(array)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(
        array.pointer,
        DLDevice(kind, ordinal),
        array.ndim,
        DLDataType(_CODES[dtype.kind], itemsize * 8, 1),
        shape,
        strides,
        0,
    )
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _LIVE[address] = (managed, shape, strides, array)
    return _capsule_new(address, b"dltensor", _capsule_destructor)
