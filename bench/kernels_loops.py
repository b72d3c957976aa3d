"""Hand-written loops as a new user writes them first (issue "Hand-written loops at numba's speed"): each function
serves scriptc, CPython and ``numba.njit`` alike; a NumPy version is the eager baseline where one is natural.

What they exercise: unit-stride inner loops over 2-D arrays whose layout is known only at run time (column sums,
the naive matrix product, the five-point Laplacian: LLVM's vectorizer versions them on a unit stride), an integer
count under a condition (Monte Carlo), and scalar powers with CPython's bits (Newton's method with ``x ** 3``, a
sum of ``(x[i] - m) ** 2``).
"""

import numpy as np

from .kernels import Kernel, allclose


def column_sums(x: np.ndarray) -> np.ndarray:
    n, m = x.shape
    out = np.zeros(m)
    for i in range(n):
        for j in range(m):
            out[j] += x[i, j]
    return out


def naive_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n, k = a.shape
    m = b.shape[1]
    c = np.zeros((n, m))
    for i in range(n):
        for p in range(k):
            aip = a[i, p]
            for j in range(m):
                c[i, j] += aip * b[p, j]
    return c


def laplacian(u: np.ndarray) -> np.ndarray:
    n, m = u.shape
    out = np.zeros_like(u)
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
    return out


def monte_carlo_hits(x: np.ndarray, y: np.ndarray) -> int:
    hits = 0
    for i in range(x.shape[0]):
        if x[i] * x[i] + y[i] * y[i] <= 1.0:
            hits += 1
    return hits


def newton_cube_roots(a: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        x = 1.0 + a[i] / 3.0
        for _ in range(20):
            x = x - (x**3 - a[i]) / (3.0 * x**2)
        out[i] = x
    return out


def squared_deviations(x: np.ndarray, m: float) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += (x[i] - m) ** 2
    return s


def _column_sums_numpy(x):
    return x.sum(axis=0)


def _laplacian_numpy(u):
    out = np.zeros_like(u)
    out[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    return out


def _rng():
    return np.random.default_rng(20261129)


def _matrix(rows, cols):
    return lambda quick: (_rng().random((rows // (4 if quick else 1), cols)),)


def _matmul_args(quick):
    n = 100 if quick else 200
    rng = _rng()
    return (rng.random((n, n)), rng.random((n, n)))


def _points(quick):
    rng = _rng()
    n = 200_000 if quick else 2_000_000
    return (rng.random(n), rng.random(n))


def _cube_args(quick):
    return (_rng().uniform(0.5, 4.0, 10_000 if quick else 100_000),)


def _deviation_args(quick):
    return (_rng().standard_normal(100_000 if quick else 1_000_000), 0.3)


def _exact(got, want):
    return None if got == want else "results differ"


KERNELS = [
    Kernel(
        "column_sums",
        "`out[j] += x[i, j]` over a 2000x512 array: a unit-stride inner loop",
        _matrix(2000, 512),
        lambda q: f"{500 if q else 2000}x512 float64",
        column_sums,
        eager={"numpy": _column_sums_numpy, "python": column_sums},
        numba=column_sums,
    ),
    Kernel(
        "naive_matmul",
        "`c[i, j] += aip * b[p, j]`, the i-p-j loop order",
        _matmul_args,
        lambda q: f"{100 if q else 200}^3 float64",
        naive_matmul,
        eager={"numpy": np.matmul, "python": naive_matmul},
        numba=naive_matmul,
    ),
    Kernel(
        "laplacian",
        "five-point Laplacian loop over a 1000x1000 array",
        _matrix(1000, 1000),
        lambda q: f"{250 if q else 1000}x1000 float64",
        laplacian,
        eager={"numpy": _laplacian_numpy, "python": laplacian},
        numba=laplacian,
    ),
    Kernel(
        "monte_carlo_hits",
        "`if x[i]*x[i] + y[i]*y[i] <= 1.0: hits += 1`",
        _points,
        lambda q: f"{'2e5' if q else '2e6'} points",
        monte_carlo_hits,
        eager={"python": monte_carlo_hits},
        numba=monte_carlo_hits,
        reference="python",
        check=_exact,
    ),
    Kernel(
        "newton_cube_roots",
        "20 Newton steps per element with scalar `x ** 3` and `x ** 2` (CPython's bits)",
        _cube_args,
        lambda q: f"{'1e4' if q else '1e5'} float64",
        newton_cube_roots,
        eager={"python": newton_cube_roots},
        numba=newton_cube_roots,
        reference="python",
        check=allclose(1e-12),
    ),
    Kernel(
        "squared_deviations",
        "`s += (x[i] - m) ** 2`: a strict sum of scalar squares (CPython's bits)",
        _deviation_args,
        lambda q: f"{'1e5' if q else '1e6'} float64",
        squared_deviations,
        eager={"python": squared_deviations},
        numba=squared_deviations,
        reference="python",
        check=allclose(1e-12),
    ),
]


# -- more loops of the same kind: small-array temporaries, sparse formats, dynamic programming, stencils, graphs --


def rk4_small(y0: np.ndarray, steps: int, h: float) -> np.ndarray:
    # a damped oscillator as a 2-element state: every step makes a dozen small arrays
    y = y0.copy()
    for _ in range(steps):
        k1 = np.array([y[1], -y[0] - 0.1 * y[1]])
        t = y + 0.5 * h * k1
        k2 = np.array([t[1], -t[0] - 0.1 * t[1]])
        t = y + 0.5 * h * k2
        k3 = np.array([t[1], -t[0] - 0.1 * t[1]])
        t = y + h * k3
        k4 = np.array([t[1], -t[0] - 0.1 * t[1]])
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def dense_to_csr_counts(a: np.ndarray) -> np.ndarray:
    # the row pointer and column indices of the nonzeros, with running counters
    n, m = a.shape
    nnz = 0
    for i in range(n):
        for j in range(m):
            if a[i, j] != 0.0:
                nnz += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(m):
            if a[i, j] != 0.0:
                indices[k] = j
                k += 1
        indptr[i + 1] = k
    return np.concatenate((indptr, indices))


def csr_matvec(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> np.ndarray:
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y


def knapsack(weights: np.ndarray, values: np.ndarray, capacity: int) -> int:
    best = np.zeros(capacity + 1, dtype=np.int64)
    for i in range(weights.shape[0]):
        w = weights[i]
        v = values[i]
        for c in range(capacity, w - 1, -1):
            if best[c - w] + v > best[c]:
                best[c] = best[c - w] + v
    return best[capacity]


def conv3x3(img: np.ndarray, k: np.ndarray) -> np.ndarray:
    n, m = img.shape
    out = np.zeros((n - 2, m - 2))
    for i in range(n - 2):
        for j in range(m - 2):
            s = 0.0
            for a in range(3):
                for b in range(3):
                    s += img[i + a, j + b] * k[a, b]
            out[i, j] = s
    return out


def box_blur(img: np.ndarray) -> np.ndarray:
    out = img.copy()
    out[1:-1, 1:-1] = (
        img[:-2, :-2]
        + img[:-2, 1:-1]
        + img[:-2, 2:]
        + img[1:-1, :-2]
        + img[1:-1, 1:-1]
        + img[1:-1, 2:]
        + img[2:, :-2]
        + img[2:, 1:-1]
        + img[2:, 2:]
    ) / 9.0
    return out


def bfs_levels(indptr: np.ndarray, indices: np.ndarray, start: int) -> np.ndarray:
    n = indptr.shape[0] - 1
    level = np.full(n, -1, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    level[start] = 0
    queue[0] = start
    head = 0
    tail = 1
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if level[v] < 0:
                level[v] = level[u] + 1
                queue[tail] = v
                tail += 1
    return level


def _rk4_args(quick):
    return (np.array([1.0, 0.0]), 2_000 if quick else 20_000, 0.01)


def _sparse(quick, density=0.01):
    rng = _rng()
    n = 1000 if quick else 4000
    a = rng.random((n, n))
    a[a > density] = 0.0
    return a


def _dense_args(quick):
    return (_sparse(quick, 0.05),)


def _csr(quick):
    a = _sparse(quick)
    indptr = np.concatenate(([0], np.cumsum(np.count_nonzero(a, axis=1)))).astype(np.int64)
    rows, cols = np.nonzero(a)
    return indptr, cols.astype(np.int64), a[rows, cols]


def _matvec_args(quick):
    indptr, indices, data = _csr(quick)
    return (indptr, indices, data, _rng().random(indptr.shape[0] - 1))


def _knapsack_args(quick):
    rng = _rng()
    n = 100 if quick else 400
    return (rng.integers(1, 100, n), rng.integers(1, 1000, n), 2_000 if quick else 10_000)


def _image_args(quick):
    n = 256 if quick else 1024
    return (_rng().random((n, n)), np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16.0)


def _blur_args(quick):
    return (_rng().random((256, 256) if quick else (1024, 1024)),)


def _bfs_args(quick):
    indptr, indices, _ = _csr(quick)
    return (indptr, indices, 0)


KERNELS += [
    Kernel(
        "rk4_small_arrays",
        "RK4 on a 2-element state: a dozen small array temporaries per step",
        _rk4_args,
        lambda q: f"{'2e3' if q else '2e4'} steps",
        rk4_small,
        eager={"python": rk4_small},
        numba=rk4_small,
        reference="python",
        check=allclose(1e-12),
    ),
    Kernel(
        "dense_to_csr",
        "dense to CSR with running counters",
        _dense_args,
        lambda q: f"{1000 if q else 4000}^2, 5% nonzero",
        dense_to_csr_counts,
        eager={"python": dense_to_csr_counts},
        numba=dense_to_csr_counts,
        reference="python",
        check=allclose(0, 0),
    ),
    Kernel(
        "csr_matvec",
        "CSR matrix times a vector",
        _matvec_args,
        lambda q: f"{1000 if q else 4000}^2, 1% nonzero",
        csr_matvec,
        eager={"python": csr_matvec},
        numba=csr_matvec,
        reference="python",
        check=allclose(1e-12),
    ),
    Kernel(
        "knapsack",
        "0/1 knapsack over int arrays",
        _knapsack_args,
        lambda q: f"{100 if q else 400} items, capacity {'2e3' if q else '1e4'}",
        knapsack,
        eager={"python": knapsack},
        numba=knapsack,
        reference="python",
        check=_exact,
    ),
    Kernel(
        "conv3x3",
        "3x3 convolution as four loops",
        _image_args,
        lambda q: f"{256 if q else 1024}^2",
        conv3x3,
        eager={"python": conv3x3},
        numba=conv3x3,
        reference="python",
        check=allclose(1e-12),
    ),
    Kernel(
        "box_blur",
        "3x3 box blur with slices",
        _blur_args,
        lambda q: f"{256 if q else 1024}^2",
        box_blur,
        eager={"numpy": box_blur, "python": box_blur},
        numba=box_blur,
        check=allclose(1e-12),
    ),
    Kernel(
        "bfs_levels",
        "breadth-first levels over CSR adjacency arrays",
        _bfs_args,
        lambda q: f"{1000 if q else 4000} nodes, 1% dense",
        bfs_levels,
        eager={"python": bfs_levels},
        numba=bfs_levels,
        reference="python",
        check=allclose(0, 0),
    ),
]

TORCH_SKIPPED = {k.name: "a hand-written loop: compared with numba and NumPy only" for k in KERNELS}
JAX_SKIPPED = dict(TORCH_SKIPPED)
