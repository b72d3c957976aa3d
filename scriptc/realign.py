"""Calls with arrays at addresses native code does not read as they are: data not aligned to its item size
(Dask's distributed scheduler delivers blocks so; ``np.frombuffer(buf, offset=3)``). NumPy computes with them,
so scripted functions do too: the call runs on an aligned twin of each such array, and afterwards

- what the function may write in an argument is copied back into it (also when the call raises: the elements
  written before the error are those NumPy would have written);
- a result that is (a view of) a twin is the same view of the argument itself, as NumPy's result would be.

A twin has the argument's strides, so that a view of it maps onto the argument at the same byte offsets; an
argument whose strides are not multiples of its item size (a twin with those strides would be unaligned
again) gets a compact twin, and a result viewing that one is a TypeError. Arrays in tuple arguments are
handled alike; lists of arrays are refused where they are bound (``frontend/lists.py``).
"""

from __future__ import annotations

import numpy as np


def needs_twins(values) -> bool:
    return any(_has_unaligned(v) for v in values)


def _has_unaligned(v) -> bool:
    if isinstance(v, np.ndarray):
        return not v.flags.aligned
    return isinstance(v, tuple) and any(_has_unaligned(x) for x in v)


class _View:
    """An array interface at an address inside another array, which it keeps alive."""

    def __init__(self, owner: np.ndarray, address: int, like: np.ndarray):
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, not owner.flags.writeable),
            "shape": like.shape,
            "strides": like.strides,
            "typestr": like.dtype.str,
            "version": 3,
        }


def _extent(a: np.ndarray) -> tuple[int, int]:
    """The lowest and one past the highest byte offset of ``a``'s elements from its data pointer."""
    if a.size == 0:
        return 0, 0
    lo = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0) + a.itemsize
    return lo, hi


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Twins:
    """The arguments with every unaligned array replaced by its twin (``args``); ``finish`` writes back and
    maps the result."""

    def __init__(self, values):
        self.pairs: list[tuple[np.ndarray, np.ndarray, int]] = []  # (argument, twin, parameter index)
        self.args = [self._twin(v, k) for k, v in enumerate(values)]

    def _twin(self, v, k: int):
        if isinstance(v, tuple):
            items = [self._twin(x, k) for x in v]
            return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
        if not isinstance(v, np.ndarray) or v.flags.aligned:
            return v
        if all(s % v.itemsize == 0 for s in v.strides):
            lo, hi = _extent(v)
            buffer = np.empty(hi - lo, np.uint8)  # NumPy's allocations are aligned for any dtype
            twin = np.ndarray(v.shape, v.dtype, buffer=buffer, offset=-lo, strides=v.strides)
        else:
            twin = np.empty(v.shape, v.dtype)
        twin[...] = v
        if not v.flags.writeable:
            twin.flags.writeable = False
        self.pairs.append((v, twin, k))
        return twin

    def write_back(self, written) -> None:
        for original, twin, k in self.pairs:
            if k in written and original.flags.writeable:  # (a read-only one raised before any write)
                original[...] = twin

    def result(self, r):
        """``r`` with every array that views a twin made the same view of its argument."""
        if isinstance(r, tuple):
            items = [self.result(x) for x in r]
            return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
        if isinstance(r, list):
            return [self.result(x) for x in r]
        if not isinstance(r, np.ndarray):
            return r
        for original, twin, _ in self.pairs:
            if not np.may_share_memory(r, twin):
                continue
            if twin.strides != original.strides:
                raise TypeError(
                    "a scripted function returned a view of an unaligned argument whose strides are "
                    "not multiples of its item size: pass an aligned copy (np.ascontiguousarray(a))"
                )
            view = np.asarray(_View(original, _address(original) + _address(r) - _address(twin), r))
            if not r.flags.writeable and view.flags.writeable:
                view.flags.writeable = False
            return view
        return r


def call_with_twins(native, values, written):
    """``native(*values)`` on aligned twins of the unaligned arrays among ``values``; ``written``: the indices of
    the parameters the function may write."""
    twins = Twins(values)
    try:
        result = native(*twins.args)
    finally:
        twins.write_back(written)
    return twins.result(result)


__all__ = ["Twins", "call_with_twins", "needs_twins"]
