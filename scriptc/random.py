"""Functional random keys, as ``jax.random`` has them: no hidden generator state, a key is a value.

A key is a plain ``uint32`` array of shape ``(2,)`` (JAX's raw ``threefry2x32`` key, ``jax.random.PRNGKey``),
so it passes in and out of scripted functions like any array. ``split`` and ``fold_in`` derive new keys,
``bits``, ``uniform``, ``normal``, ``bernoulli`` and ``permutation`` draw from one; the same key always gives
the same numbers. Every function works from Python and inside ``@scriptc.script`` functions (natively and in
the interpreter) and runs the same scripted kernels below in both: the frontend turns
``scriptc.random.uniform(key, (2, 3))`` into a call of ``_uniform32``/``_uniform64`` with the number of elements,
then a reshape. The only primitive is the ``random::threefry2x32`` operator (``scriptc/ops/random.py``).

The bits are JAX's with ``jax_threefry_partitionable=True`` (JAX's default since 0.5; checked against 0.10):
element i of a draw encrypts the 64-bit counter i split into ``(hi, lo)`` words. ``uniform`` fills the mantissa
with the top bits (23 of a 32-bit draw for float32; 52 of a 64-bit draw, ``(w0 << 32 | w1) >> 12``, for
float64), scales to ``[minval, maxval)`` in the dtype and clamps below at ``minval``, as ``jax.random.uniform``.
``normal`` is ``sqrt(2) * erfinv(u)`` with ``u`` uniform in ``(-1, 1)`` and XLA's ``ErfInv`` polynomials (Giles'
single-precision one for float32, XLA's three-piece double one for float64).
"""

from __future__ import annotations

import math

import numpy as np

from .frontend.library_calls import library, run
from .function import script
from .ops.random import fma, threefry2x32

__all__ = ["key", "split", "fold_in", "bits", "uniform", "normal", "bernoulli", "permutation"]


# -- kernels (scripted; every public function below runs one) -------------------------------------------------
@script
def _key(seed: int) -> np.ndarray:
    k = np.zeros(2, dtype=np.uint32)
    if seed < -2147483648 or seed > 2147483647:
        k[0] = (seed >> 32) & 0xFFFFFFFF  # a 64-bit seed, as JAX splits it with jax_enable_x64
    k[1] = seed & 0xFFFFFFFF  # an int32 seed: JAX's default mode leaves the high word 0
    return k


@script
def _counters(n: int) -> np.ndarray:
    """The counters 0..n-1 as (hi, lo) uint32 rows: JAX's iota_2x32_shape."""
    i = np.arange(n)
    return np.stack(((i >> 32).astype(np.uint32), (i & 0xFFFFFFFF).astype(np.uint32)), axis=1)


@script
def _split(key: np.ndarray, num: int) -> np.ndarray:
    if num < 0:  # (np.arange(-1) is empty: it would give no keys where the shape (num, 2) cannot be)
        raise ValueError("negative dimensions are not allowed")
    return threefry2x32(key, _counters(num))


@script
def _fold_in(key: np.ndarray, data: int) -> np.ndarray:
    counter = np.zeros((1, 2), dtype=np.uint32)
    counter[0, 1] = data & 0xFFFFFFFF
    return threefry2x32(key, counter)[0].copy()


@script
def _bits32(key: np.ndarray, n: int) -> np.ndarray:
    words = threefry2x32(key, _counters(n))
    return words[:, 0] ^ words[:, 1]


@script
def _uniform32(key: np.ndarray, n: int, minval: float, maxval: float) -> np.ndarray:
    floats = (_bits32(key, n) >> 9).astype(np.float32) * 1.1920928955078125e-07  # mantissa * 2**-23, exact
    lo = np.full(1, minval, dtype=np.float32)
    hi = np.full(1, maxval, dtype=np.float32)
    return np.maximum(lo, fma(floats, hi - lo, lo))


@script
def _uniform64(key: np.ndarray, n: int, minval: float, maxval: float) -> np.ndarray:
    words = threefry2x32(key, _counters(n)).astype(np.int64)
    mantissa = (words[:, 0] << 20) | (words[:, 1] >> 12)  # (w0 << 32 | w1) >> 12
    floats = mantissa.astype(np.float64) * 2.220446049250313e-16  # * 2**-52, exact
    return np.maximum(minval, fma(floats, np.full(1, maxval - minval), np.full(1, minval)))


# XLA's ErfInv polynomials in w = -log1p(-x*x), highest degree first (xla/hlo/builder/lib/math.cc): Giles,
# "Approximating the erfinv function" (2010), single precision, split at w = 5; double: three pieces. Tuples of
# floats (the single precision ones rounded to float32): compiled code holds them as constants, where an array
# would be referred to by its address, which neither the on-disk cache nor an exported library can keep.
ERFINV32_BELOW_5 = tuple(
    np.array(
        [
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ],
        np.float32,
    ).tolist()
)
ERFINV32_ABOVE_5 = tuple(
    np.array(
        [
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ],
        np.float32,
    ).tolist()
)
ERFINV64_BELOW_6_25 = (
    -3.6444120640178196996e-21,
    -1.685059138182016589e-19,
    1.2858480715256400167e-18,
    1.115787767802518096e-17,
    -1.333171662854620906e-16,
    2.0972767875968561637e-17,
    6.6376381343583238325e-15,
    -4.0545662729752068639e-14,
    -8.1519341976054721522e-14,
    2.6335093153082322977e-12,
    -1.2975133253453532498e-11,
    -5.4154120542946279317e-11,
    1.051212273321532285e-09,
    -4.1126339803469836976e-09,
    -2.9070369957882005086e-08,
    4.2347877827932403518e-07,
    -1.3654692000834678645e-06,
    -1.3882523362786468719e-05,
    0.0001867342080340571352,
    -0.00074070253416626697512,
    -0.0060336708714301490533,
    0.24015818242558961693,
    1.6536545626831027356,
)
ERFINV64_BELOW_16 = (
    2.2137376921775787049e-09,
    9.0756561938885390979e-08,
    -2.7517406297064545428e-07,
    1.8239629214389227755e-08,
    1.5027403968909827627e-06,
    -4.013867526981545969e-06,
    2.9234449089955446044e-06,
    1.2475304481671778723e-05,
    -4.7318229009055733981e-05,
    6.8284851459573175448e-05,
    2.4031110387097893999e-05,
    -0.0003550375203628474796,
    0.00095328937973738049703,
    -0.0016882755560235047313,
    0.0024914420961078508066,
    -0.0037512085075692412107,
    0.005370914553590063617,
    1.0052589676941592334,
    3.0838856104922207635,
)
ERFINV64_ABOVE_16 = (
    -2.7109920616438573243e-11,
    -2.5556418169965252055e-10,
    1.5076572693500548083e-09,
    -3.7894654401267369937e-09,
    7.6157012080783393804e-09,
    -1.4960026627149240478e-08,
    2.9147953450901080826e-08,
    -6.7711997758452339498e-08,
    2.2900482228026654717e-07,
    -9.9298272942317002539e-07,
    4.5260625972231537039e-06,
    -1.9681778105531670567e-05,
    7.5995277030017761139e-05,
    -0.00021503011930044477347,
    -0.00013871931833623122026,
    1.0103004648645343977,
    4.8499064014085844221,
)


@script
def _horner(coefficients, t: np.ndarray) -> np.ndarray:
    """The polynomial with these coefficients (a tuple, highest degree first) at every element of ``t``, in t's
    dtype: p = c + p * t, as XLA evaluates it."""
    p = np.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        p = c + p * t
    return p


@script
def _erfinv32(x: np.ndarray) -> np.ndarray:
    w = -np.log1p(-x * x)
    r = np.where(w < 5.0, _horner(ERFINV32_BELOW_5, w - 2.5), _horner(ERFINV32_ABOVE_5, np.sqrt(w) - 3.0)) * x
    return np.where(np.abs(x) == 1.0, x * 3.4028234663852886e38, r)  # erfinv(+-1): +-FLT_MAX, as XLA


@script
def _erfinv64(x: np.ndarray) -> np.ndarray:
    w = -np.log1p(-x * x)
    s = np.sqrt(w)
    r = (
        np.where(
            w < 6.25,
            _horner(ERFINV64_BELOW_6_25, w - 3.125),
            np.where(w < 16.0, _horner(ERFINV64_BELOW_16, s - 3.25), _horner(ERFINV64_ABOVE_16, s - 5.0)),
        )
        * x
    )
    return np.where(np.abs(x) == 1.0, x * 1.7976931348623157e308, r)


@script
def _normal32(key: np.ndarray, n: int) -> np.ndarray:
    return _erfinv32(_uniform32(key, n, -0.9999999403953552, 1.0)) * 1.4142135623730951


@script
def _normal64(key: np.ndarray, n: int) -> np.ndarray:
    return _erfinv64(_uniform64(key, n, -0.9999999999999999, 1.0)) * 1.4142135623730951


@script
def _bernoulli(key: np.ndarray, p: float, n: int) -> np.ndarray:
    return _uniform64(key, n, 0.0, 1.0) < p


@script
def _permutation(key: np.ndarray, n: int) -> np.ndarray:
    """JAX's _shuffle of arange(n): sort by fresh 32-bit keys, ceil(3 ln n / ln(2**32 - 1)) rounds."""
    x = np.arange(n)
    rounds = int(math.ceil(3.0 * math.log(max(1, n)) / math.log(4294967295.0)))
    for _ in range(rounds):
        keys = _split(key, 2)
        key = keys[0].copy()
        order = np.argsort(_bits32(keys[1].copy(), n).astype(np.int64))
        shuffled = np.empty(n, dtype=np.int64)
        for i in range(n):
            shuffled[i] = x[order[i]]
        x = shuffled
    return x


def _float_kernel(name, kernels):
    def choose(dtype):
        if dtype not in kernels:
            raise TypeError(f"scriptc.random.{name}: dtype must be float32 or float64, got {dtype}")
        return kernels[dtype]

    return choose


# -- the public functions: one binding for Python and scripted callers (LibraryCall) ----------------------------
@library(lambda: _key)
def key(seed):
    """A new key from an integer seed: ``uint32[2]``, ``jax.random.PRNGKey(seed)``."""
    return run(key, locals())


@library(lambda: _split)
def split(key, num=2):
    """``num`` new keys, shape ``(num, 2)``, independent of ``key`` and of each other."""
    return run(split, locals())


@library(lambda: _fold_in)
def fold_in(key, data):
    """A new key from ``key`` and an integer (taken modulo 2**32)."""
    return run(fold_in, locals())


@library(lambda: _bits32, shape="shape")
def bits(key, shape=()):
    """Uniform ``uint32`` bits of ``shape``."""
    return run(bits, locals())


@library(_float_kernel("uniform", {"float32": _uniform32, "float64": _uniform64}), shape="shape", static=("dtype",))
def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Floats uniform in ``[minval, maxval)``."""
    return run(uniform, locals())


@library(_float_kernel("normal", {"float32": _normal32, "float64": _normal64}), shape="shape", static=("dtype",))
def normal(key, shape=(), dtype=np.float64):
    """Standard normal floats."""
    return run(normal, locals())


@library(lambda: _bernoulli, shape="shape")
def bernoulli(key, p=0.5, shape=()):
    """Booleans, True with probability ``p``: ``uniform(key, shape) < p`` in float64."""
    return run(bernoulli, locals())


@library(lambda: _permutation)
def permutation(key, n):
    """A random permutation of ``range(n)`` (int64)."""
    return run(permutation, locals())
