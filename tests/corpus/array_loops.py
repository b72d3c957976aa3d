"""Explicit loop nests over arrays: matmul, distances, stencils, prefix sums,
recurrences, in-place updates of arguments, Mandelbrot, regression."""

import math

import numpy as np
import scriptc

from . import case, rng

DECAY = 0.5


@scriptc.script
def matmul_loops(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n, k = a.shape
    m = b.shape[1]
    c = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s += a[i, p] * b[p, j]
            c[i, j] = s
    return c


case(matmul_loops, lambda: (rng(0).random((3, 4)), rng(1).random((4, 2))))


@scriptc.script
def int_matmul_loops(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    c = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            for p in range(n):
                c[i, j] += a[i, p] * b[p, j]
    return c


case(int_matmul_loops, lambda: (rng(0).integers(-5, 5, (3, 3)), rng(1).integers(-5, 5, (3, 3))))


@scriptc.script
def pairwise_distances(x: np.ndarray) -> np.ndarray:
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


case(pairwise_distances, lambda: (rng(0).random((5, 3)),))


@scriptc.script
def stencil_1d(x: np.ndarray) -> np.ndarray:
    n = len(x)
    y = np.zeros(n)
    y[0] = x[0]
    y[n - 1] = x[n - 1]
    for i in range(1, n - 1):
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]
    return y


case(stencil_1d, lambda: (rng(0).random(10),))


@scriptc.script
def heat_2d(u: np.ndarray, steps: int) -> np.ndarray:
    n, m = u.shape
    for j in range(m):
        u[0, j] = 1.0
    for _ in range(steps):
        v = u.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                v[i, j] = u[i, j] + 0.2 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])
        u = v
    return u


case(heat_2d, lambda: (np.zeros((6, 6)), 10))


@scriptc.script
def prefix_sum(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    s = 0.0
    for i in range(len(x)):
        s += x[i]
        out[i] = s
    return out


case(prefix_sum, lambda: (rng(0).random(9),))


@scriptc.script
def prefix_sum_inplace(x: np.ndarray):
    for i in range(1, x.shape[0]):
        x[i] += x[i - 1]


case(prefix_sum_inplace, lambda: (np.arange(1, 11),))


@scriptc.script
def recurrence(x: np.ndarray) -> np.ndarray:
    s = np.empty(x.size)
    s[0] = x[0]
    for i in range(1, x.size):
        s[i] = DECAY * s[i - 1] + x[i]
    return s


case(recurrence, lambda: (rng(0).standard_normal(12),))


@scriptc.script
def scale_inplace(a: np.ndarray, f: float):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] * f + 1.0
    a[0, 0] = -1.0


case(scale_inplace, lambda: (rng(0).random((3, 4)), 2.5))


@scriptc.script
def aug_index_assign(x: np.ndarray) -> float:
    for i in range(len(x)):
        x[i] += 1.0
        x[i] *= 2.0
        x[i] -= 0.5
        x[i] /= 4.0
    x[-1] **= 2.0
    return x[0] + x[-1]


case(aug_index_assign, lambda: (rng(0).random(6),))


@scriptc.script
def mandelbrot(w: int, h: int, maxiter: int) -> np.ndarray:
    counts = np.zeros((h, w), dtype=np.int64)
    for py in range(h):
        for px in range(w):
            cr = -2.0 + 2.5 * px / w
            ci = -1.0 + 2.0 * py / h
            zr = 0.0
            zi = 0.0
            n = 0
            while n < maxiter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n += 1
            counts[py, px] = n
    return counts


case(mandelbrot, lambda: (8, 6, 30))


@scriptc.script
def argmax_loop(x: np.ndarray):
    best = 0
    for i in range(1, len(x)):
        if x[i] > x[best]:
            best = i
    return best, x[best]


case(argmax_loop, lambda: (rng(0).random(11),))


@scriptc.script
def bubble_sort(x: np.ndarray):
    n = len(x)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if x[j] > x[j + 1]:
                x[j], x[j + 1] = x[j + 1], x[j]
                swapped = True
        if not swapped:
            break


case(bubble_sort, lambda: (rng(3).integers(-20, 20, 9),))
case(bubble_sort, lambda: (rng(0).random(7),))


@scriptc.script
def transpose_loop(a: np.ndarray) -> np.ndarray:
    n, m = a.shape
    t = np.zeros((m, n))
    for i in range(n):
        for j in range(m):
            t[j][i] = a[i][j]
    return t


case(transpose_loop, lambda: (rng(0).random((2, 5)),))


@scriptc.script
def row_col_slices(a: np.ndarray):
    n = a.shape[0]
    m = a.shape[1]
    rows = np.zeros(n)
    cols = np.zeros(m)
    for i in range(n):
        r = a[i, :]
        rows[i] = r.max() - r.min()
    for j in range(m):
        c = a[:, j]
        cols[j] = c[0] * c[-1]
    return rows, cols


case(row_col_slices, lambda: (rng(0).random((4, 5)),))


@scriptc.script
def for_over_array(x: np.ndarray) -> float:
    s = 0.0
    count = 0
    for v in x:
        if v < 0.2:
            continue
        s += v * v
        count += 1
        if count == 6:
            break
    return s / count


case(for_over_array, lambda: (rng(0).random(10),))


@scriptc.script
def negative_and_slices(x: np.ndarray):
    print(x[-1], x[-3], x[len(x) - 2])
    print(x[2:5], x[:3], x[9:], x[1:-1:3], x[::4])
    print(x[::-1], x[8:2:-2], x[-4:])
    y = np.zeros(6)
    y[1:4] = x[5:8]
    y[4:] = x[-2:]
    return y


case(negative_and_slices, lambda: (np.arange(12.0),))


@scriptc.script
def slice_views_write_through(a: np.ndarray) -> np.ndarray:
    r = a[1, :]
    r[0] = 100.0  # writes through the view into the argument
    c = a[:, 2]
    for i in range(c.shape[0]):
        c[i] = -c[i]
    b = a  # alias, not a copy
    b[2, 3] = 7.0
    return a[0:2, 1:3]


case(slice_views_write_through, lambda: (rng(0).random((3, 4)),))


@scriptc.script
def histogram(x: np.ndarray, nbins: int) -> np.ndarray:
    h = np.zeros(nbins, dtype=np.int64)
    for v in x:
        k = int(v * nbins)
        if k >= nbins:
            k = nbins - 1
        h[k] += 1
    return h


case(histogram, lambda: (rng(0).random(40), 5))


@scriptc.script
def trapezoid_sin(a: float, b: float, n: int) -> float:
    xs = np.linspace(a, b, n + 1)
    h = (b - a) / n
    s = 0.5 * (math.sin(xs[0]) + math.sin(xs[n]))
    for i in range(1, n):
        s += math.sin(xs[i])
    return s * h


case(trapezoid_sin, lambda: (0.0, math.pi, 64))


@scriptc.script
def running_max_and_prod(x: np.ndarray):
    m = np.zeros_like(x)
    p = np.ones(len(x), dtype=np.int64)
    cur = x[0]
    prod = 1
    for i in range(len(x)):
        cur = max(cur, x[i])
        m[i] = cur
        prod *= x[i] + 1
        p[i] = prod
    return m, p


case(running_max_and_prod, lambda: (np.array([1, 3, 2, 5, 4, 4, 6, 0]),))


@scriptc.script
def bool_array_loop(mask: np.ndarray) -> int:
    runs = 0
    longest = 0
    cur = 0
    for i in range(len(mask)):
        if mask[i]:
            cur += 1
            if cur > longest:
                longest = cur
        else:
            if cur > 0:
                runs += 1
            cur = 0
    if cur > 0:
        runs += 1
    return runs * 100 + longest


case(bool_array_loop, lambda: (rng(0).random(15) > 0.4,))


@scriptc.script
def game_of_life(board: np.ndarray, steps: int) -> np.ndarray:
    n, m = board.shape
    for _ in range(steps):
        new = np.zeros((n, m), dtype=np.int64)
        for i in range(n):
            for j in range(m):
                live = 0
                for di in range(-1, 2):
                    for dj in range(-1, 2):
                        if di == 0 and dj == 0:
                            continue
                        live += board[(i + di) % n, (j + dj) % m]
                if board[i, j] == 1 and (live == 2 or live == 3):
                    new[i, j] = 1
                elif board[i, j] == 0 and live == 3:
                    new[i, j] = 1
        board = new
    return board


case(game_of_life, lambda: ((rng(0).random((6, 6)) > 0.6).astype(np.int64), 3))


@scriptc.script
def jacobi(a: np.ndarray, b: np.ndarray, tol: float):
    n = b.shape[0]
    x = np.zeros(n)
    err = 1.0
    it = 0
    while err > tol and it < 500:
        xn = np.zeros(n)
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= a[i, j] * x[j]
            xn[i] = s / a[i, i]
        err = 0.0
        for i in range(n):
            err = max(err, abs(xn[i] - x[i]))
        x = xn
        it += 1
    return x, it


case(
    jacobi,
    lambda: (np.array([[4.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 4.0]]), np.array([2.0, 4.0, 10.0]), 1e-10),
)


@scriptc.script
def rank3_loops(t: np.ndarray) -> np.ndarray:
    a, b, c = t.shape
    out = np.zeros((a, c))
    for i in range(a):
        for j in range(b):
            for k in range(c):
                out[i, k] += t[i, j, k] * (j + 1)
    t[1, 2, 3] = 0.0
    return out


case(rank3_loops, lambda: (rng(0).random((2, 3, 4)),))


@scriptc.script
def linreg_gd(x: np.ndarray, y: np.ndarray, epochs: int, lr: float):
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


case(
    linreg_gd,
    lambda: (
        np.linspace(0.0, 1.0, 50),
        3.0 * np.linspace(0.0, 1.0, 50) + 2.0 + 0.1 * rng(0).standard_normal(50),
        200,
        0.5,
    ),
)


@scriptc.script
def dot_and_axpy_loops(x: np.ndarray, y: np.ndarray) -> float:
    d = 0.0
    for i in range(len(x)):
        d += x[i] * y[i]
    for i in range(len(y)):
        y[i] = y[i] + d * x[i]
    return d


case(dot_and_axpy_loops, lambda: (rng(0).random(7), rng(1).random(7)))


@scriptc.script
def int_array_arith(x: np.ndarray):
    for i in range(len(x)):
        print(x[i] // 3, x[i] % 3, x[i] * x[i], -x[i], abs(x[i]), x[i] / 2)
    x[0] = x[1] * 4 - x[2]
    x[1] //= 2
    x[2] %= 5


case(int_array_arith, lambda: (np.array([5, -3, 8, -1, 0, 7, -6]),))


@scriptc.script
def first_pair_above(x: np.ndarray, threshold: float) -> int:
    # the function of samples/control_flow.py
    n = len(x)
    checked = 0
    for i in range(n):
        if x[i] < 0.0:
            continue
        for j in range(i + 1, n):
            checked += 1
            if x[j] < 0.0:
                break
            if x[i] + x[j] > threshold:
                print("found after", checked, "checks:", i, j)
                return i * n + j
    print("none found after", checked, "checks")
    return -1


case(first_pair_above, lambda: (rng(1).standard_normal(8), 1.3))
case(first_pair_above, lambda: (rng(1).standard_normal(8), 10.0))
