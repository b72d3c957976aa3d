"""The kernels a numba user writes first, written as such a user would: plain loops in the scriptc subset.

Each function serves scriptc, CPython and ``numba.njit`` alike (see kernels.py); a NumPy version is the eager
baseline where one is natural. What they exercise: bounds checks the bounds-check pass must prove (the stencil,
Floyd-Warshall, column statistics), loads and stores in ``while`` loops (insertion sort), ``int()`` of a float
(histogram), ``x ** 2`` on scalars (column statistics, k-means) and ``for v in x`` iteration (histogram).
"""

import numpy as np

from .kernels import Kernel, allclose


def stencil2d(x: np.ndarray, steps: int) -> np.ndarray:
    # Jacobi relaxation with a five-point stencil; the border is copied unchanged
    n = x.shape[0]
    m = x.shape[1]
    a = x.copy()
    b = np.empty((n, m))
    for _ in range(steps):
        for j in range(m):
            b[0, j] = a[0, j]
            b[n - 1, j] = a[n - 1, j]
        for i in range(1, n - 1):
            b[i, 0] = a[i, 0]
            b[i, m - 1] = a[i, m - 1]
            for j in range(1, m - 1):
                b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
        t = a
        a = b
        b = t
    return a


def stencil2d_numpy(x: np.ndarray, steps: int) -> np.ndarray:
    a = x.copy()
    b = np.empty_like(a)
    for _ in range(steps):
        b[0, :] = a[0, :]
        b[-1, :] = a[-1, :]
        b[:, 0] = a[:, 0]
        b[:, -1] = a[:, -1]
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a, b = b, a
    return a


def insertion_sort(x: np.ndarray) -> np.ndarray:
    a = x.copy()
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def insertion_sort_numpy(x: np.ndarray) -> np.ndarray:
    return np.sort(x, kind="stable")


def histogram(x: np.ndarray, lo: float, hi: float, nbins: int) -> np.ndarray:
    counts = np.zeros(nbins, dtype=np.int64)
    width = (hi - lo) / nbins
    for v in x:
        if v >= lo and v < hi:
            k = int((v - lo) / width)
            if k >= nbins:
                k = nbins - 1
            counts[k] += 1
    return counts


def histogram_numpy(x: np.ndarray, lo: float, hi: float, nbins: int) -> np.ndarray:
    inside = x[(x >= lo) & (x < hi)]
    k = np.minimum(((inside - lo) / ((hi - lo) / nbins)).astype(np.int64), nbins - 1)
    return np.bincount(k, minlength=nbins)


def column_stats(x: np.ndarray) -> np.ndarray:
    # mean and (population) standard deviation of every column, two passes
    n = x.shape[0]
    m = x.shape[1]
    out = np.empty((2, m))
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += x[i, j]
        mean = s / n
        ss = 0.0
        for i in range(n):
            ss += (x[i, j] - mean) ** 2
        out[0, j] = mean
        out[1, j] = (ss / n) ** 0.5
    return out


def column_stats_numpy(x: np.ndarray) -> np.ndarray:
    return np.stack([x.mean(axis=0), x.std(axis=0)])


def floyd_warshall(d: np.ndarray) -> np.ndarray:
    n = d.shape[0]
    dist = d.copy()
    for k in range(n):
        for i in range(n):
            dik = dist[i, k]
            for j in range(n):
                alt = dik + dist[k, j]
                if alt < dist[i, j]:
                    dist[i, j] = alt
    return dist


def floyd_warshall_numpy(d: np.ndarray) -> np.ndarray:
    dist = d.copy()
    for k in range(dist.shape[0]):
        dist = np.minimum(dist, dist[:, k : k + 1] + dist[k : k + 1, :])
    return dist


def kmeans_assign(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    # index of the nearest centroid of every point (squared Euclidean distance)
    n = points.shape[0]
    d = points.shape[1]
    k = centroids.shape[0]
    labels = np.empty(n, dtype=np.int64)
    for i in range(n):
        best = 0
        best_dist = 0.0
        for c in range(k):
            dist = 0.0
            for t in range(d):
                dist += (points[i, t] - centroids[c, t]) ** 2
            if c == 0 or dist < best_dist:
                best = c
                best_dist = dist
        labels[i] = best
    return labels


def kmeans_assign_numpy(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    diff = points[:, None, :] - centroids[None, :, :]
    return np.argmin(np.sum(diff**2, axis=2), axis=1)


# ================================================================================================
# problem sizes
# ================================================================================================
def _rng():
    return np.random.default_rng(20240607)


def _stencil_args(quick):
    n = 160 if quick else 500
    return (_rng().random((n, n)), 10 if quick else 20)


def _sort_args(quick):
    return (_rng().random(1_500 if quick else 5_000),)


def _histogram_args(quick):
    return (_rng().standard_normal(1_000_000 if quick else 10_000_000), -3.0, 3.0, 100)


def _column_args(quick):
    return (_rng().random((100_000 if quick else 1_000_000, 8)),)


def _floyd_args(quick):
    n = 120 if quick else 300
    d = _rng().random((n, n)) * 10.0
    np.fill_diagonal(d, 0.0)
    return (d,)


def _kmeans_args(quick):
    rng = _rng()
    return (rng.random((20_000 if quick else 200_000, 4)), rng.random((16, 4)))


def exact():
    def check(got, want):
        if not np.array_equal(np.asarray(got), np.asarray(want)):
            return "results differ"
        return None

    return check


KERNELS = [
    Kernel(
        "stencil2d",
        "five-point Jacobi stencil with border copies: bounds checks, vectorised inner loop",
        _stencil_args,
        lambda q: f"{160 if q else 500}^2 float64, {10 if q else 20} steps",
        stencil2d,
        eager={"numpy": stencil2d_numpy, "python": stencil2d},
        numba=stencil2d,
    ),
    Kernel(
        "insertion_sort",
        "insertion sort with a `while`: loads and stores in a data-dependent loop",
        _sort_args,
        lambda q: f"{1500 if q else 5000} float64",
        insertion_sort,
        eager={"numpy": insertion_sort_numpy, "python": insertion_sort},
        numba=insertion_sort,
        check=exact(),
    ),
    Kernel(
        "histogram",
        "binning with `int((v - lo) / width)` over `for v in x`",
        _histogram_args,
        lambda q: f"{'1e6' if q else '1e7'} float64, 100 bins",
        histogram,
        eager={"numpy": histogram_numpy, "python": histogram},
        numba=histogram,
        check=exact(),
    ),
    Kernel(
        "column_stats",
        "column mean and std with `(x[i, j] - m) ** 2`: scalar ** 2, strided loads",
        _column_args,
        lambda q: f"{'1e5' if q else '1e6'}x8 float64",
        column_stats,
        eager={"numpy": column_stats_numpy, "python": column_stats},
        numba=column_stats,
        check=allclose(1e-9),
    ),
    Kernel(
        "floyd_warshall",
        "all-pairs shortest paths, triple loop with a conditional store",
        _floyd_args,
        lambda q: f"{120 if q else 300} nodes",
        floyd_warshall,
        eager={"numpy": floyd_warshall_numpy, "python": floyd_warshall},
        numba=floyd_warshall,
        check=exact(),
    ),
    Kernel(
        "kmeans_assign",
        "nearest centroid of every point: small inner loops, scalar ** 2",
        _kmeans_args,
        lambda q: f"{'2e4' if q else '2e5'} points x 4 dims, 16 centroids",
        kmeans_assign,
        eager={"numpy": kmeans_assign_numpy, "python": kmeans_assign},
        numba=kmeans_assign,
        check=exact(),
    ),
]

TORCH_SKIPPED = {k.name: "a user-kernel row: compared with numba and NumPy only" for k in KERNELS}
JAX_SKIPPED = dict(TORCH_SKIPPED)
