"""The Threefry-2x32 block cipher, the one primitive behind ``scriptc.random`` (JAX's default PRNG).

``threefry2x32(key, counts)`` encrypts each row ``(hi, lo)`` of ``counts`` (a ``uint32`` array of shape
``(n, 2)``) with ``key`` (``uint32[2]``): 20 rounds of 32-bit add, rotate and xor with a key injection every
four rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the rotation constants and
the key-schedule parity ``0x1BD11BDA`` are the paper's, as in JAX's ``threefry2x32_p``). The result has the
shape of ``counts``: row i holds the two output words for counter row i. Everything else in ``scriptc.random``
(splitting, folding in, bits, floats) is written over this operator in scripted code.

The reference implementation below computes in NumPy ``uint32`` arithmetic, which wraps modulo 2**32 as the
cipher needs; the native lowering is ``scriptc/backend/llvm/lowering/random_lower.py``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.registry import Batch, Effect, OpTypeError, register
from ..ir.types import TensorType

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA


def key_schedule(k0: int, k1: int) -> tuple[int, int, int]:
    return k0, k1, k0 ^ k1 ^ KEY_PARITY


def _check(key: np.ndarray, counts: np.ndarray) -> None:
    if key.shape != (2,):
        raise ValueError(f"threefry2x32: key must have shape (2,), got {key.shape}")
    if counts.ndim != 2 or counts.shape[1] != 2:
        raise ValueError(f"threefry2x32: counts must have shape (n, 2), got {counts.shape}")


def threefry2x32(key: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Threefry-2x32 of every counter row ``(hi, lo)`` of ``counts`` under ``key``; both ``uint32``."""
    _check(key, counts)
    ks = key_schedule(int(key[0]), int(key[1]))
    ks = [np.uint32(k) for k in ks]
    x0 = counts[:, 0].astype(np.uint32) + ks[0]
    x1 = counts[:, 1].astype(np.uint32) + ks[1]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x0 ^ x1
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return np.stack([x0, x1], axis=1)


def _rule(key, counts):
    for what, t in (("key", key), ("counts", counts)):
        if not isinstance(t, TensorType):
            raise OpTypeError(f"threefry2x32(): {what} must be an array, got {t}")
        if t.dtype is not None and t.dtype != "uint32":
            raise OpTypeError(f"threefry2x32(): {what} must be a uint32 array, got {t.dtype}")
        if t.rank is not None and t.rank != (1 if what == "key" else 2):
            raise OpTypeError(f"threefry2x32(): {what} must have rank {1 if what == 'key' else 2}, got {t.rank}")
    return TensorType("uint32", 2)


def _shape(types, consts):
    counts = types[1]
    return [(counts.shape[0] if counts.shape else None, 2)]


# Batched per key (``Batch.LANES``): vmap over keys runs the cipher once per example's key.
register(
    "random::threefry2x32(Tensor key, Tensor counts) -> Tensor",
    impl=threefry2x32,
    infer=_rule,
    effect=Effect.RAISES,
    batch=Batch.LANES,
    shape=_shape,
    py=(threefry2x32,),
)


# -- fma(x, scale, offset): x * scale + offset rounded once, as XLA's CPU backend contracts
# jax.random.uniform's ``floats * (maxval - minval) + minval`` ------------------------------------------------
def _fma_one(a: float, b: float, c: float, dtype) -> float:
    from fractions import Fraction  # on first use: fractions imports decimal, a few ms of import scriptc

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    r = float(exact) if abs(exact) < Fraction(2) ** 1024 else math.copysign(math.inf, exact)
    if dtype == np.float32 and math.isfinite(r) and Fraction(r) != exact:
        # round to odd in 53 bits, then to 24: a single correct rounding of the exact value
        bits = np.array(r).view(np.int64)
        if not bits & 1:
            r = float(np.nextafter(r, math.inf if exact > Fraction(r) else -math.inf))
    return r


def fma(x: np.ndarray, scale: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``x * scale[0] + offset[0]`` with one rounding, for a 1-D float array ``x`` and 1-element ``scale``,
    ``offset`` of its dtype."""
    if scale.shape != (1,) or offset.shape != (1,):
        raise ValueError("fma: scale and offset must have shape (1,)")
    b, c = float(scale[0]), float(offset[0])
    if not (math.isfinite(b) and math.isfinite(c)):
        return (x * scale[0] + offset[0]).astype(x.dtype)
    out = [_fma_one(float(a), b, c, x.dtype) if math.isfinite(a) else a * b + c for a in x.tolist()]
    return np.array(out, dtype=np.float64).astype(x.dtype)


def _fma_rule(x, scale, offset):
    for t in (x, scale, offset):
        if not isinstance(t, TensorType) or t.rank not in (None, 1):
            raise OpTypeError("fma(): needs 1-D arrays")
        if t.dtype is not None and t.dtype not in ("float32", "float64"):
            raise OpTypeError(f"fma(): needs float32 or float64 arrays, got {t.dtype}")
    if len({t.dtype for t in (x, scale, offset)}) != 1:
        raise OpTypeError("fma(): the three arrays must have one dtype")
    return TensorType(x.dtype, 1)


def _fma_vjp(e, g, out, x, scale, offset):
    """x * scale + offset, scale and offset of shape (1,)."""

    def like_scale(total):  # (an element-wise add: a shared kernel's call, where a fill would be a loop)
        return e.add(e.op("aten::zeros_like", scale, dtype=scale.type.dtype or "float64"), total)

    return e.mul(g, scale), like_scale(e.op("aten::sum", e.mul(g, x))), like_scale(e.op("aten::sum", g))


register(
    "random::fma(Tensor x, Tensor scale, Tensor offset) -> Tensor",
    impl=fma,
    infer=_fma_rule,
    batch=Batch.LANES,
    effect=Effect.RAISES,
    shape=lambda types, consts: [types[0].shape],
    py=(fma,),
    vjp=_fma_vjp,
)
