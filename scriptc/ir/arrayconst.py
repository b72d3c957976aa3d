"""Array constants in IR text: a module-level NumPy array that a scripted function reads is frozen into its graph
as ``prim::Constant[value=<array>]`` (a read-only copy, taken at compile time).

Text format, one token the parser reads back:

    array(float64, (2, 3), [1.0, 2.5, nan, -inf, 0.0, -0.0])   values in C order, when the array is small
    array(float64, (1000,), sha1=5f6c...)                       larger arrays: by content hash only

A small array round-trips exactly (floats print as ``repr``, which reads back bit for bit). A large one reads back
as an ``UnrestoredArray`` that prints the same text but holds no data: such a parsed graph can be printed and
verified, not run (the interpreter and the backend raise).
"""

from __future__ import annotations


import numpy as np

INLINE_LIMIT = 16


class UnrestoredArray:
    """A large array constant read from text: its dtype, shape and content hash, no data."""

    def __init__(self, dtype: str, shape: tuple, digest: str):
        self.dtype, self.shape, self.digest = np.dtype(dtype), shape, digest
        self.ndim = len(shape)

    def __repr__(self):
        return f"array({self.dtype.name}, {self.shape!r}, sha1={self.digest})"

    def __array__(self, *args, **kwargs):
        raise RuntimeError(f"the array constant {self!r} was read from IR text without its data")


def frozen(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, read-only copy of ``a``: what a graph holds."""
    copy = np.array(a, order="C", copy=True)
    copy.setflags(write=False)
    return copy


def digest(a: np.ndarray) -> str:
    import hashlib  # on first use: hashlib loads OpenSSL, a few ms of import scriptc

    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def format_array(a) -> str:
    if isinstance(a, UnrestoredArray):
        return repr(a)
    head = f"array({a.dtype.name}, {tuple(a.shape)!r}"
    if a.size > INLINE_LIMIT:
        return f"{head}, sha1={digest(a)})"
    return f"{head}, [{', '.join(repr(v) for v in a.reshape(-1).tolist())}])"


def parse_array(text: str):
    """The value ``format_array`` printed as ``text``."""
    inner = text[len("array(") : -1]
    dtype, rest = inner.split(",", 1)
    close = rest.index(")")
    shape = tuple(int(d) for d in rest[rest.index("(") + 1 : close].split(",") if d.strip())
    data = rest[close + 1 :].strip().lstrip(",").strip()
    if data.startswith("sha1="):
        return UnrestoredArray(dtype.strip(), shape, data[len("sha1=") :])
    tokens = [t.strip() for t in data[1:-1].split(",") if t.strip()]
    kind = np.dtype(dtype.strip()).kind
    convert = {"b": lambda t: t == "True", "f": float}.get(kind, int)
    return frozen(np.array([convert(t) for t in tokens], dtype=dtype.strip()).reshape(shape))
