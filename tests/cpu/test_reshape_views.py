"""A reshape is a view wherever NumPy's is (``_attempt_nocopy_reshape``: a C-contiguous array always, a strided
one when its strides can express the new shape), with NumPy's strides, so that writes through it reach the
array it came from; elsewhere a copy, as NumPy's."""

import numpy as np
import pytest

import scriptc


@scriptc.script
def into_two(x: np.ndarray, a: int, b: int) -> np.ndarray:
    y = x.reshape(a, b)
    y[a - 1, 0] = -7.0
    return y


@scriptc.script
def into_three(x: np.ndarray, a: int, b: int, c: int) -> np.ndarray:
    y = np.reshape(x, (a, b, c))
    y[0, b - 1, c - 1] = -9.0
    return y


@scriptc.script
def flattened(x: np.ndarray) -> np.ndarray:
    y = x.reshape(-1)
    y[y.size - 1] = -3.0
    return y


VIEWS = {
    "transposed": lambda z: z.transpose(1, 0, 3, 2),
    "middle slice": lambda z: z[:, 1:3],
    "reversed, stepped": lambda z: z[::-1, :, ::2],
    "column": lambda z: z[:, 0, 1],
    "corner": lambda z: z[1:, :, 1:3, :1],
    "permuted row": lambda z: z.transpose(2, 3, 0, 1)[:, 1],
    "flat stepped": lambda z: z.reshape(-1)[::3],
    "contiguous": lambda z: z,
    "unit axis": lambda z: z[:, :1, :, :],
}


def shapes_of(size: int, rank: int) -> list[tuple]:
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    if rank == 1:
        return [()]
    if rank == 2:
        return [(a, size // a) for a in divisors]
    return [(a, b, size // (a * b)) for a in divisors for b in divisors if size % (a * b) == 0][:10]


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("fn, rank", [(flattened, 1), (into_two, 2), (into_three, 3)], ids=["1d", "2d", "3d"])
def test_reshape_is_numpys_view_or_copy(view, fn, rank):
    base = np.arange(48.0).reshape(2, 3, 4, 2)
    for shape in shapes_of(VIEWS[view](base).size, rank):
        results = []
        for run in (fn, fn.interpret, fn.py_func):
            whole = base.copy()
            y = run(VIEWS[view](whole), *shape)
            results.append((y, whole))
        (y, whole), *others = results
        for other_y, other_whole in others:
            assert y.shape == other_y.shape and y.strides == other_y.strides and np.array_equal(y, other_y)
            assert np.array_equal(whole, other_whole)  # the write reached the array exactly where NumPy's did


@scriptc.script
def reshape_to(x: np.ndarray, a: int, b: int, c: int):
    return x.reshape(a, b), x.reshape(c)


@pytest.mark.parametrize(
    "a, b, c",
    [
        (-1, -1, 12),
        (-2, -1, 12),
        (5, -1, 12),
        (-1, 5, 12),
        (-3, 4, -7),
        (0, -1, 12),
        (2**32, 2**32, 12),
        (3, 4, 5),
        (4, -3, -1),
    ],
)
def test_reshape_dimensions_and_errors_are_numpys(a, b, c):
    """Any negative dimension is NumPy's unknown one (-3 too), at most one; a product beyond int64 is a size
    mismatch; the messages show the unknown as newaxis, dropped when it leads (NumPy's "(5)")."""
    x = np.arange(12.0)
    try:
        want = [r.shape for r in reshape_to.py_func(x, a, b, c)]
    except ValueError as e:
        for run in (reshape_to, reshape_to.interpret):
            with pytest.raises(ValueError) as got:
                run(x, a, b, c)
            assert str(got.value) == str(e)
        return
    for run in (reshape_to, reshape_to.interpret):
        assert [r.shape for r in run(x, a, b, c)] == want


@scriptc.script
def write_through_reshaped_copy(x: np.ndarray):
    y = x.T.copy()  # ndarray.copy() is C-ordered: its reshape is a view
    y.reshape(-1)[1] = 100.0
    return y


def test_copy_method_is_c_ordered():
    """The interpreter copied with np.copy, which keeps a transposed array's order: its reshape was a copy, and
    the write did not reach y (NumPy's and native code's did)."""
    x = np.arange(6.0).reshape(2, 3)
    want = write_through_reshaped_copy.py_func(x)
    for run in (write_through_reshaped_copy, write_through_reshaped_copy.interpret):
        np.testing.assert_array_equal(run(x), want)


@scriptc.script
def flatten_and_transpose(x: np.ndarray):
    a = x.flatten()  # always a copy, C order
    a[0] = -1.0
    b = x.transpose()  # a view, as x.T
    b[0, 1] = 50.0
    return a, np.transpose(x)


@pytest.mark.parametrize("layout", ["C", "strided", "F"])
def test_flatten_copies_and_transpose_is_a_view(layout):
    base = np.arange(12.0).reshape(3, 4)
    x = {"C": base[:2], "strided": base[:, ::2], "F": base[:2, :3].T}[layout]
    want_x, got_x, interp_x = x.copy(order="K"), x.copy(order="K"), x.copy(order="K")
    want = flatten_and_transpose.py_func(want_x)
    for run, arg in ((flatten_and_transpose, got_x), (flatten_and_transpose.interpret, interp_x)):
        got = run(arg)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(arg, want_x)  # the write through the transpose reached x


@scriptc.script
def as_shape(x: np.ndarray, a: int, b: int) -> np.ndarray:
    return x.reshape(a, b)


@scriptc.script
def as_one(x: np.ndarray) -> np.ndarray:
    return x.reshape(1)


@scriptc.script
def as_rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(12, -1)


@pytest.mark.parametrize("tier", ["first", "optimized"])
def test_a_reshape_to_its_own_shape_keeps_its_strides(tier):
    """NumPy's first check: the shape the array has (given without -1) is a plain view with its strides, not
    the contiguous or no-copy strides (which differ on length-1 axes and negative steps)."""
    cases = [
        (as_shape, np.arange(36.0).reshape(12, 3)[:, :1], 12, 1),
        (as_shape, np.arange(12.0).reshape(3, 4)[:1, :3], 1, 3),
        (as_shape, np.arange(12.0).reshape(1, 12).T, 12, 1),
        (as_shape, np.ones((3, 4)), 4, 3),
        (as_one, np.arange(1.0)[::-1]),
        (as_one, np.arange(5.0)[::3][::2]),
        (as_rows, np.arange(36.0).reshape(12, 3)[:, :1]),
    ]
    for fn in (as_shape, as_one, as_rows):
        fn(*next(args for f, *args in cases if f is fn))
        if tier == "optimized":
            assert fn.wait_optimized(timeout=120)
    for fn, *args in cases:
        got, want = fn(*args), fn.py_func(*args)
        assert got.strides == want.strides and np.array_equal(got, want), (fn.__name__, args[0].strides, args[1:])
        assert np.shares_memory(got, args[0]) == np.shares_memory(want, args[0])
