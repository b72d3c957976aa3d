"""The benchmark kernels, one implementation per peer.

The loop versions at the top are written in the scriptc subset (typed parameters, for/while loops, ``if``,
NumPy ufuncs/reductions, indexing, ``np.zeros``/``np.empty``). The same function objects serve three
implementations:

* ``scriptc``: ``scriptc.script(fn)`` -- the runner applies the decorator itself (instead of ``@scriptc.script``
  here) so that the decoration's compile work is timed as part of the first call, never hidden in the import;
* ``python``: ``fn`` run by CPython (the plain-Python baseline for scalar loops);
* ``numba``: ``numba.njit(fn)``.

NumPy-vectorized versions (``*_numpy``) are the "NumPy eager" baseline. The TorchScript and JAX versions are
built by :func:`torch_versions` and :func:`jax_versions`, which import their library only when asked, so this
module needs nothing but NumPy. The problem sizes and the table of which function implements which kernel
under which peer are in :data:`KERNELS` at the bottom.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Tuple

import numpy as np


# ================================================================================================
# scriptc-subset versions (also the "python" and "numba" implementations)
# ================================================================================================
def add_loop(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x + 1.0
    return x


def linreg(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
    # y ~ a*x + b by full-batch gradient descent on the mean squared error, explicit loops
    n = len(x)
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        ga = 0.0
        gb = 0.0
        for i in range(n):
            err = a * x[i] + b - y[i]
            ga += err * x[i]
            gb += err
        a -= lr * 2.0 * ga / n
        b -= lr * 2.0 * gb / n
    return a, b


def elementwise_chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


def mandelbrot(cr: np.ndarray, ci: np.ndarray, maxit: int) -> np.ndarray:
    # escape count of c = cr[i] + 1j*ci[j]: iterations before |z| > 2 (maxit if it never escapes)
    h = len(ci)
    w = len(cr)
    out = np.zeros((h, w), dtype=np.int64)
    for j in range(h):
        for i in range(w):
            zr = 0.0
            zi = 0.0
            k = 0
            while k < maxit:
                zr2 = zr * zr
                zi2 = zi * zi
                if zr2 + zi2 > 4.0:
                    break
                zi = 2.0 * zr * zi + ci[j]
                zr = zr2 - zi2 + cr[i]
                k += 1
            out[j, i] = k
    return out


def pairwise(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    d = x.shape[1]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = x[i, k] - x[j, k]
                s += t * t
            out[i, j] = math.sqrt(s)
    return out


def recurrence(x: np.ndarray) -> np.ndarray:
    # s[i] = 0.5*s[i-1] + x[i], s[-1] = 0
    n = len(x)
    s = np.empty(n)
    prev = 0.0
    for i in range(n):
        prev = 0.5 * prev + x[i]
        s[i] = prev
    return s


def add(a: float, b: float) -> float:
    return a + b


# The compile_time kernel: a 20-line loop nest, written to a fresh temporary file and exec'd for every
# measurement (scriptc compiles from source, so the function must live in a real file).
COMPILE_TIME_SOURCE = """\
import math
import numpy as np


def loop_nest(x: np.ndarray, m: int) -> float:
    n = len(x)
    acc = 0.0
    for r in range(m):
        for i in range(n):
            v = x[i] * (r + 1)
            if v > 0.75:
                acc += math.sqrt(v)
            elif v < 0.25:
                acc -= v * v
            else:
                k = 0
                while k < 3:
                    acc += 0.1 * v
                    k += 1
            if acc > 1000.0:
                acc = acc / 2.0
        acc = acc * 0.999
    return acc
"""
COMPILE_TIME_FUNCTION = "loop_nest"


# ================================================================================================
# NumPy eager (vectorized) versions
# ================================================================================================
def linreg_numpy(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
    n = len(x)
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        err = a * x + b - y
        a -= lr * 2.0 * float(np.dot(err, x)) / n
        b -= lr * 2.0 * float(err.sum()) / n
    return a, b


def mandelbrot_numpy(cr: np.ndarray, ci: np.ndarray, maxit: int) -> np.ndarray:
    # The same arithmetic as the scalar loop, on the whole grid; escaped points are frozen.
    crg = cr[None, :]
    cig = ci[:, None]
    zr = np.zeros((len(ci), len(cr)))
    zi = np.zeros((len(ci), len(cr)))
    count = np.zeros((len(ci), len(cr)), dtype=np.int64)
    for _ in range(maxit):
        zr2 = zr * zr
        zi2 = zi * zi
        active = zr2 + zi2 <= 4.0
        count += active
        zi = np.where(active, 2.0 * zr * zi + cig, zi)
        zr = np.where(active, zr2 - zi2 + crg, zr)
    return count


def pairwise_numpy(x: np.ndarray) -> np.ndarray:
    diff = x[:, None, :] - x[None, :, :]
    return np.sqrt((diff * diff).sum(axis=-1))


# ================================================================================================
# TorchScript versions (torch.jit.script, CPU tensors)
# ================================================================================================
def torch_versions() -> dict:
    """Undecorated TorchScript-compatible functions, by kernel name (the runner applies torch.jit.script).
    A kernel missing here has no sane TorchScript form; TORCH_SKIPPED says why."""
    import torch

    def add_loop_t(x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x = x + 1.0
        return x

    def linreg_t(x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float) -> Tuple[torch.Tensor, torch.Tensor]:
        n = x.shape[0]
        a = torch.zeros((), dtype=torch.float64)
        b = torch.zeros((), dtype=torch.float64)
        for _ in range(epochs):
            err = a * x + b - y
            a = a - lr * 2.0 * torch.dot(err, x) / n
            b = b - lr * 2.0 * err.sum() / n
        return a, b

    def elementwise_chain_t(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(-x * x) * torch.sin(3.0 * x) + 0.5 * x

    def mandelbrot_t(cr: torch.Tensor, ci: torch.Tensor, maxit: int) -> torch.Tensor:
        crg = cr.unsqueeze(0)
        cig = ci.unsqueeze(1)
        zr = torch.zeros((ci.shape[0], cr.shape[0]), dtype=torch.float64)
        zi = torch.zeros((ci.shape[0], cr.shape[0]), dtype=torch.float64)
        count = torch.zeros((ci.shape[0], cr.shape[0]), dtype=torch.int64)
        for _ in range(maxit):
            zr2 = zr * zr
            zi2 = zi * zi
            active = zr2 + zi2 <= 4.0
            count = count + active.to(torch.int64)
            zi = torch.where(active, 2.0 * zr * zi + cig, zi)
            zr = torch.where(active, zr2 - zi2 + crg, zr)
        return count

    def pairwise_t(x: torch.Tensor) -> torch.Tensor:
        diff = x.unsqueeze(1) - x.unsqueeze(0)
        return torch.sqrt((diff * diff).sum(-1))

    def add_t(a: float, b: float) -> float:
        return a + b

    return {
        "add_loop_small": add_loop_t,
        "add_loop_large": add_loop_t,
        "linreg": linreg_t,
        "elementwise_chain": elementwise_chain_t,
        "mandelbrot": mandelbrot_t,
        "pairwise": pairwise_t,
        "call_overhead": add_t,
    }


TORCH_SKIPPED = {
    "recurrence": "no sane TorchScript form: a scalar loop runs one tensor op per element (microseconds each, "
    "minutes in all) inside C++, where the time budget cannot interrupt it"
}


# ================================================================================================
# JAX versions (jax.jit on CPU, float64)
# ================================================================================================
def jax_versions() -> dict:
    """Un-jitted JAX functions, by kernel name (the runner applies jax.jit). Loops over array updates use
    lax.fori_loop, the scalar recurrence lax.scan. Needs jax_enable_x64 (the runner sets it)."""
    import jax.numpy as jnp
    from jax import lax

    def add_loop_j(x, n):
        return lax.fori_loop(0, n, lambda _, v: v + 1.0, x)

    def linreg_j(x, y, epochs, lr):
        n = x.shape[0]

        def epoch(_, ab):
            a, b = ab
            err = a * x + b - y
            return a - lr * 2.0 * jnp.dot(err, x) / n, b - lr * 2.0 * jnp.sum(err) / n

        zero = jnp.zeros((), dtype=x.dtype)
        return lax.fori_loop(0, epochs, epoch, (zero, zero))

    def elementwise_chain_j(x):
        return jnp.exp(-x * x) * jnp.sin(3.0 * x) + 0.5 * x

    def mandelbrot_j(cr, ci, maxit):
        crg = cr[None, :]
        cig = ci[:, None]
        shape = (ci.shape[0], cr.shape[0])

        def step(_, state):
            zr, zi, count = state
            zr2 = zr * zr
            zi2 = zi * zi
            active = zr2 + zi2 <= 4.0
            return (
                jnp.where(active, zr2 - zi2 + crg, zr),
                jnp.where(active, 2.0 * zr * zi + cig, zi),
                count + active.astype(count.dtype),
            )

        init = (jnp.zeros(shape, cr.dtype), jnp.zeros(shape, cr.dtype), jnp.zeros(shape, jnp.int64))
        return lax.fori_loop(0, maxit, step, init)[2]

    def pairwise_j(x):
        diff = x[:, None, :] - x[None, :, :]
        return jnp.sqrt(jnp.sum(diff * diff, axis=-1))

    def recurrence_j(x):
        def step(prev, xi):
            s = 0.5 * prev + xi
            return s, s

        return lax.scan(step, jnp.zeros((), x.dtype), x)[1]

    def add_j(a, b):
        return a + b

    return {
        "add_loop_small": add_loop_j,
        "add_loop_large": add_loop_j,
        "linreg": linreg_j,
        "elementwise_chain": elementwise_chain_j,
        "mandelbrot": mandelbrot_j,
        "pairwise": pairwise_j,
        "recurrence": recurrence_j,
        "call_overhead": add_j,
    }


JAX_SKIPPED: dict = {}


# ================================================================================================
# The kernel table
# ================================================================================================
def allclose(rtol=1e-6, atol=1e-9):
    def check(got, want):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return f"shape {got.shape} != {want.shape}"
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return f"max abs error {err:.3g} (rtol={rtol:g}, atol={atol:g})"
        return None

    return check


def counts_match(max_fraction=1e-3):
    """Escape counts: exact, except that a compiler contracting a*b+c into an FMA may move a few boundary
    points by an iteration; allow at most ``max_fraction`` of the grid to differ."""

    def check(got, want):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return f"shape {got.shape} != {want.shape}"
        if not np.issubdtype(got.dtype, np.integer):
            return f"dtype {got.dtype} is not an integer type"
        bad = np.count_nonzero(got != want)
        if bad > max_fraction * got.size:
            return f"{bad} of {got.size} counts differ"
        return None

    return check


@dataclass
class Kernel:
    name: str
    what: str  # one line for the README/table notes
    make_args: Callable[[bool], tuple]  # quick -> NumPy/Python arguments
    size: Callable[[bool], str]  # quick -> human-readable problem size
    scriptc: Callable | None  # the scriptc-subset function (also "python"/"numba" unless noted)
    eager: dict = field(default_factory=dict)  # "numpy"/"python" -> plain function
    numba: Callable | None = None
    reference: str = "numpy"  # which eager implementation is the oracle
    check: Callable = field(default_factory=allclose)


def _rng():
    return np.random.default_rng(20240601)


def _add_loop_small_args(quick):
    return (_rng().random((2, 3)), 100 if quick else 1000)


def _add_loop_large_args(quick):
    return (_rng().random(100_000 if quick else 1_000_000), 10 if quick else 100)


def _linreg_args(quick):
    n, epochs = (100, 1000) if quick else (1000, 10_000)
    rng = _rng()
    x = rng.random(n)
    y = 3.0 * x - 2.0 + 0.1 * rng.standard_normal(n)
    return (x, y, epochs, 0.1)


def _elementwise_args(quick):
    return (_rng().standard_normal(1_000_000 if quick else 10_000_000),)


def _mandelbrot_args(quick):
    w = h = 128 if quick else 400  # quick: ~1/10 of the points
    return (np.linspace(-2.0, 0.6, w), np.linspace(-1.3, 1.3, h), 100)


def _pairwise_args(quick):
    return (_rng().random((160 if quick else 500, 3)),)  # quick: ~1/10 of the pairs


def _recurrence_args(quick):
    return (_rng().standard_normal(1_000_000 if quick else 10_000_000),)


KERNELS = [
    Kernel(
        "add_loop_small",
        "`x = x + 1.0` in a loop on a 2x3 array: per-operation overhead",
        _add_loop_small_args,
        lambda q: f"2x3 float64, {100 if q else 1000} iterations",
        add_loop,
        eager={"numpy": add_loop},
        numba=add_loop,
    ),
    Kernel(
        "add_loop_large",
        "`x = x + 1.0` in a loop on a big array: memory bandwidth, allocation reuse",
        _add_loop_large_args,
        lambda q: f"{'1e5' if q else '1e6'} float64, {10 if q else 100} iterations",
        add_loop,
        eager={"numpy": add_loop},
        numba=add_loop,
    ),
    Kernel(
        "linreg",
        "full-batch gradient descent for y ~ a*x + b: scalar loops (scriptc/numba/python) vs "
        "per-epoch vector ops (numpy/torch/jax)",
        _linreg_args,
        lambda q: f"{100 if q else 1000} points, {1000 if q else 10000} epochs",
        linreg,
        eager={"numpy": linreg_numpy, "python": linreg},
        numba=linreg,
    ),
    Kernel(
        "elementwise_chain",
        "`exp(-x*x) * sin(3x) + 0.5x`: ufunc chain, fusion and temporaries",
        _elementwise_args,
        lambda q: f"{'1e6' if q else '1e7'} float64",
        elementwise_chain,
        eager={"numpy": elementwise_chain},
        numba=elementwise_chain,
    ),
    Kernel(
        "mandelbrot",
        "escape counts with scalar while loops and early exit (numpy/torch/jax: masked vector iterations)",
        _mandelbrot_args,
        lambda q: f"{128 if q else 400}x{128 if q else 400} grid, max 100 iterations",
        mandelbrot,
        eager={"numpy": mandelbrot_numpy, "python": mandelbrot},
        numba=mandelbrot,
        check=counts_match(),
    ),
    Kernel(
        "pairwise",
        "Euclidean distance matrix with a triple loop (numpy/torch/jax: broadcasting)",
        _pairwise_args,
        lambda q: f"{160 if q else 500} points x 3 dims",
        pairwise,
        eager={"numpy": pairwise_numpy, "python": pairwise},
        numba=pairwise,
    ),
    Kernel(
        "recurrence",
        "`s[i] = 0.5*s[i-1] + x[i]`: a loop-carried scalar dependence, no vector form",
        _recurrence_args,
        lambda q: f"{'1e6' if q else '1e7'} float64",
        recurrence,
        eager={"python": recurrence},
        numba=recurrence,
        reference="python",
    ),
    Kernel(
        "call_overhead",
        "`a + b` on two floats: the cost of one call from Python",
        lambda q: (1.0, 2.0),
        lambda q: "2 floats",
        add,
        eager={"python": add},
        numba=add,
        reference="python",
    ),
    # compile_time is not timed like the others: see run.py (bench_compile_time)
    Kernel(
        "compile_time",
        "first call (compile + a tiny run) of a fresh 20-line loop nest",
        lambda q: (np.linspace(0.0, 1.0, 16), 2),
        lambda q: "20-line loop nest, fresh function each time",
        None,
        eager={},
        numba=None,
        reference="python",
    ),
]


# Topic modules ``bench/kernels_<topic>.py`` add rows: each defines ``KERNELS`` (a list of Kernel) and may define
# ``torch_versions()`` / ``jax_versions()`` (name -> function, imported lazily like the ones above) and
# ``TORCH_SKIPPED`` / ``JAX_SKIPPED`` (name -> why) and ``TORCH_EAGER`` (names whose torch version is not scripted).
def _topic_modules():
    import importlib
    import pkgutil
    from pathlib import Path

    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("kernels_"))
    return [importlib.import_module(f"{__package__}.{n}") for n in names]


_TOPICS = _topic_modules() if __package__ else []
TORCH_EAGER: set[str] = set()  # kernels whose torch version runs eagerly (torch.func, autograd), unscripted
JAX_DRIVERS: set[str] = set()  # kernels whose jax version is a Python loop over jitted code, not jitted whole
for _topic in _TOPICS:
    KERNELS += _topic.KERNELS
    TORCH_SKIPPED.update(getattr(_topic, "TORCH_SKIPPED", {}))
    JAX_SKIPPED.update(getattr(_topic, "JAX_SKIPPED", {}))
    TORCH_EAGER.update(getattr(_topic, "TORCH_EAGER", set()))
    JAX_DRIVERS.update(getattr(_topic, "JAX_DRIVERS", set()))


def _with_topics(base, attr):
    def versions() -> dict:
        out = base()
        for topic in _TOPICS:
            if hasattr(topic, attr):
                out.update(getattr(topic, attr)())
        return out

    return versions


torch_versions = _with_topics(torch_versions, "torch_versions")
jax_versions = _with_topics(jax_versions, "jax_versions")

KERNELS_BY_NAME = {k.name: k for k in KERNELS}
