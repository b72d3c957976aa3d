"""Functional random keys (JAX's design, article 003): no hidden state; a key is a ``uint32[2]`` array, split
into independent keys, and every draw is a pure function of the key it is given.

    key = scriptc.random.key(0)
    key, sub = scriptc.random.split(key)
    x = scriptc.random.normal(sub, (3, 4))

The generator is Threefry-2x32 (20 rounds), with JAX's default settings (``jax_threefry_partitionable=True``,
JAX's default since 0.5): ``key``, ``split``, ``fold_in``, ``bits`` and ``uniform`` give exactly the bits
``jax.random`` gives; ``normal`` evaluates the inverse error function as XLA does for float32 (Giles'
polynomial) and to full precision for float64, agreeing with JAX to about 1e-7 and 1e-14; ``bernoulli`` and ``permutation`` follow JAX's algorithms
(``uniform(key, shape, float32) < p``; sorting ``arange(n)`` by random 32-bit keys, one round per factor of
2**32/3 in ``n``). One difference: ``key(seed)`` uses all 64 bits of the seed, as JAX does with
``jax_enable_x64``; without it JAX keeps the low 32 bits.
"""
from __future__ import annotations

import math

import numpy as np

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(key, x0, x1):
    """Threefry-2x32 of the counter pairs (x0, x1) (uint32 arrays of one shape) under ``key``: two uint32
    arrays. The block cipher everything else is built from."""
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    ks = (k0, k1, k0 ^ k1 ^ PARITY)
    x0 = np.asarray(x0, np.uint32) + ks[0]
    x1 = np.asarray(x1, np.uint32) + ks[1]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def key(seed: int) -> np.ndarray:
    """The key for an integer seed: its high and low 32 bits (as a 64-bit two's complement integer)."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise OverflowError("seed must fit in 64 bits")
    seed &= 2 ** 64 - 1
    return np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


def _check_key(k) -> np.ndarray:
    k = np.asarray(k)
    if k.shape != (2,) or k.dtype != np.uint32:
        raise TypeError(f"a random key is a uint32 array of shape (2,), got {k.dtype} {k.shape}: make one with "
                        "scriptc.random.key(seed)")
    return k


def _counters(shape):
    """The flat index of every element of ``shape`` as (high, low) 32-bit words, JAX's iota_2x32_shape."""
    n = math.prod(shape)
    flat = np.arange(n, dtype=np.uint64).reshape(shape)
    return (flat >> np.uint64(32)).astype(np.uint32), (flat & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def split(k, num: int = 2) -> np.ndarray:
    """``num`` new keys (a ``(num, 2)`` uint32 array) from one."""
    k = _check_key(k)
    hi, lo = _counters((int(num),))
    b0, b1 = threefry2x32(k, hi, lo)
    return np.stack([b0, b1], axis=-1)


def fold_in(k, data: int) -> np.ndarray:
    """A new key from a key and an integer (its low 32 bits), e.g. a step number."""
    k = _check_key(k)
    b0, b1 = threefry2x32(k, np.zeros(1, np.uint32), np.array([int(data) & 0xFFFFFFFF], np.uint32))
    return np.array([b0[0], b1[0]], np.uint32)


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def bits(k, shape=(), width: int = 32) -> np.ndarray:
    """Random unsigned integers of ``width`` (8, 16, 32 or 64) bits."""
    k = _check_key(k)
    shape = _shape(shape)
    b0, b1 = threefry2x32(k, *_counters(shape))
    if width == 64:
        return (b0.astype(np.uint64) << np.uint64(32)) | b1.astype(np.uint64)
    if width not in (8, 16, 32):
        raise ValueError("width must be 8, 16, 32 or 64")
    return (b0 ^ b1).astype(f"uint{width}")


_FLOAT = {np.dtype(np.float64): (64, 52, np.uint64), np.dtype(np.float32): (32, 23, np.uint32),
          np.dtype(np.float16): (16, 10, np.uint16)}


def uniform(k, shape=(), dtype=np.float64, minval=0.0, maxval=1.0) -> np.ndarray:
    """Floats in [minval, maxval): random mantissa bits under the exponent of 1.0, minus 1, scaled."""
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT:
        raise TypeError(f"uniform: dtype must be float64, float32 or float16, got {dtype}")
    nbits, nmant, utype = _FLOAT[dtype]
    shape = _shape(shape)
    rng_bits = max(nbits, 8)
    raw = bits(k, shape, rng_bits).astype(utype)
    one = np.array(1.0, dtype).view(utype)
    floats = ((raw >> utype(rng_bits - nmant)) | one).view(dtype) - dtype.type(1.0)
    lo, hi = dtype.type(minval), dtype.type(maxval)
    # floats * (hi - lo) + lo with one rounding, as XLA computes it (a fused multiply-add)
    return np.maximum(lo, _fma(floats, hi - lo, lo).reshape(shape)).astype(dtype)


def normal(k, shape=(), dtype=np.float64) -> np.ndarray:
    """Standard normal floats: sqrt(2) * erfinv(u), u uniform in (-1, 1)."""
    dtype = np.dtype(dtype)
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = uniform(k, shape, dtype, lo, 1.0)
    if dtype == np.float64:
        return np.sqrt(2.0) * erfinv(u)
    # float32 (and float16, computed in float32): Giles' single-precision polynomial in float32, as XLA does
    x = erfinv_giles(u.astype(np.float32))
    return (np.float32(np.sqrt(2.0)) * x).astype(dtype)


def bernoulli(k, p=0.5, shape=()) -> np.ndarray:
    """Booleans that are True with probability ``p`` (``uniform(key, shape, float32) < p``, as JAX)."""
    return uniform(k, shape, np.float32) < np.float32(p)


def permutation(k, n: int) -> np.ndarray:
    """A random permutation of ``range(n)`` (int64)."""
    k = _check_key(k)
    x = np.arange(int(n), dtype=np.int64)
    rounds = math.ceil(3 * math.log(max(1, int(n))) / math.log(2 ** 32 - 1))
    for _ in range(rounds):
        k, sub = split(k)
        x = x[np.argsort(bits(sub, x.shape), kind="stable")]
    return x


def _fma(a: np.ndarray, b, c) -> np.ndarray:
    """a * b + c rounded once. float32/float16: exactly, in float64. float64: the exact product's high and low
    parts (Dekker's splitting) added to c with the rounding error of that sum carried (correct except in
    double-rounding ties, which uniform's operands do not produce)."""
    dtype = a.dtype
    if dtype != np.float64:
        return (a.astype(np.float64) * float(b) + float(c)).astype(dtype)
    b, c = np.float64(b), np.float64(c)
    p = a * b
    split = np.float64(134217729.0)        # 2**27 + 1
    ah = a * split - (a * split - a)
    bh = b * split - (b * split - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl        # p + e == a * b exactly
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)                              # s + err == p + c exactly
    return s + (err + e)


# -- the inverse error function, to double precision ----------------------------------------------------------

GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                 -0.00417768164, 0.246640727, 1.50140941)
GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682)


def erfinv_giles(y: np.ndarray) -> np.ndarray:
    """Giles' single-precision approximation of erf^-1, evaluated in the dtype of ``y``."""
    t = y.dtype.type
    w = -np.log1p(-y * y)
    small = w < t(5.0)
    ws = np.where(small, w - t(2.5), np.sqrt(np.where(small, t(5.0), w)) - t(3.0))
    pc, pt = np.zeros_like(y), np.zeros_like(y)
    for c, d in zip(GILES_CENTRAL, GILES_TAIL):
        pc, pt = pc * ws + t(c), pt * ws + t(d)
    return np.where(np.abs(y) == t(1.0), np.copysign(t(np.inf), y), np.where(small, pc, pt) * y)


def erfinv(y: np.ndarray) -> np.ndarray:
    """erf^-1 on float64 arrays: Giles' approximation refined by two Newton steps on erf."""
    y = np.asarray(y, np.float64)
    x = erfinv_giles(y)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    for _ in range(2):
        x = x - (erf(x) - y) / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    return np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), x)


__all__ = ["bernoulli", "bits", "fold_in", "key", "normal", "permutation", "split", "threefry2x32", "uniform"]
