"""Array operators of GPU signatures beyond element-wise chains, in the grid emulator: reductions along an axis,
copies and dtype casts, writes into existing arrays (``x += y``, slice assignment, ``fill``, overlapping slices),
and printing a device array. Each is a kernel of its own (``passes/device_groups.py``) and must give what NumPy
gives, for several block sizes; their PTX assembles."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import scriptc
import scriptc.cuda as cuda
from scriptc.backend.nvptx import GpuUnsupported, ptxas_path

PTXAS = ptxas_path()
rng = np.random.default_rng(11)


@scriptc.script
def column_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.sum(x, axis=0), np.mean(x, axis=1), np.max(x, axis=0)


@scriptc.script
def axis_of_3d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.min(x, axis=1), np.prod(x, axis=2), np.sum(x, axis=-3)


@scriptc.script
def transposed_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = x.T  # a view: strided lines
    return np.sum(t, axis=1), np.max(t[1:, ::2], axis=0)


@scriptc.script
def bool_lines(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.any(x > 0.5, axis=1), np.all(x > -2.0, axis=0)


@scriptc.script
def int_sums(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sum(a, axis=0), np.mean(a, axis=1)


@pytest.mark.parametrize("block", [1, 32, 100])
@pytest.mark.parametrize("shape", [(7, 5), (1, 33), (130, 3)])
def test_axis_reductions_match_numpy(emulator, block, shape):
    cuda.set_block_size(block)
    x = rng.standard_normal(shape)
    for got, want in zip(column_stats(cuda.to_device(x)), column_stats.py_func(x)):
        assert isinstance(got, cuda.DeviceArray)
        got = got.copy_to_host()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13)  # one thread adds its line in order, NumPy pairwise
    for got, want in zip(bool_lines(cuda.to_device(x)), bool_lines.py_func(x)):
        np.testing.assert_array_equal(got.copy_to_host(), want)
    a = rng.integers(-9, 9, shape).astype(np.int32)
    for got, want in zip(int_sums(cuda.to_device(a)), int_sums.py_func(a)):
        got = got.copy_to_host()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("block", [1, 64])
def test_axis_reductions_of_views_and_rank_3(emulator, block):
    cuda.set_block_size(block)
    x = rng.standard_normal((4, 6, 5)) + 2.0
    for got, want in zip(axis_of_3d(cuda.to_device(x)), axis_of_3d.py_func(x)):
        np.testing.assert_allclose(got.copy_to_host(), want, rtol=1e-13)
    y = rng.standard_normal((9, 8))
    for g, want in zip(transposed_stats(cuda.to_device(y)), transposed_stats.py_func(y)):
        np.testing.assert_allclose(g.copy_to_host(), want, rtol=1e-13)


def test_reductions_along_an_empty_axis_give_numpys_identity_or_error(emulator):
    sums = int_sums(cuda.to_device(np.zeros((0, 3), np.int64)))[0]
    np.testing.assert_array_equal(sums.copy_to_host(), np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="zero-size array"):
        column_stats(cuda.to_device(np.zeros((0, 3))))


@scriptc.script
def accumulate(x: np.ndarray, y: np.ndarray, a: float) -> None:
    x += y * a
    x[0] = 7.0


@scriptc.script
def write_slices(x: np.ndarray, y: np.ndarray) -> None:
    x[1:4] = y[:3]
    x[4:] = 0.5


@scriptc.script
def shift_right(x: np.ndarray) -> None:
    x[1:] = x[:-1]


@scriptc.script
def fill_rows(x: np.ndarray, v: float) -> None:
    x[0].fill(v)
    x[1:, 1] = x[1:, 0] * 2.0


@scriptc.script
def copies(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = x.copy()
    c += 1.0
    return c, x.astype(np.int32)


@pytest.mark.parametrize("block", [1, 32, 100])
def test_writes_into_device_arrays_match_numpy(emulator, block):
    cuda.set_block_size(block)
    for fn, make in (
        (accumulate, lambda: (rng.standard_normal((5, 3)), rng.standard_normal(3), 0.25)),
        (write_slices, lambda: (rng.standard_normal(9), rng.standard_normal(5))),
        (shift_right, lambda: (np.arange(10.0),)),
        (fill_rows, lambda: (rng.standard_normal((4, 3)), -1.5)),
    ):
        args = make()
        host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        device = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        assert fn(*device) is None
        fn.py_func(*host)
        for d, h in zip(device, host):
            if isinstance(h, np.ndarray):
                np.testing.assert_array_equal(d.copy_to_host(), h)


def test_an_overlapping_write_reads_the_old_values(emulator):
    d = cuda.to_device(np.arange(6.0))
    shift_right(d)
    np.testing.assert_array_equal(d.copy_to_host(), [0.0, 0.0, 1.0, 2.0, 3.0, 4.0])


def test_a_write_that_does_not_broadcast_raises_numpys_error(emulator):
    with pytest.raises(ValueError) as cpu:
        write_slices(np.zeros(9), np.zeros(2))
    with pytest.raises(ValueError) as gpu:
        write_slices(cuda.to_device(np.zeros(9)), cuda.to_device(np.zeros(2)))
    assert "broadcast" in str(cpu.value) and "broadcast" in str(gpu.value)


def test_copies_and_casts_are_new_device_arrays(emulator):
    x = rng.standard_normal((3, 4)) * 10
    d = cuda.to_device(x)
    c, i = copies(d)
    assert isinstance(c, cuda.DeviceArray) and c.pointer != d.pointer
    np.testing.assert_array_equal(c.copy_to_host(), x + 1.0)
    np.testing.assert_array_equal(d.copy_to_host(), x)  # the copy was written, not the argument
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i.copy_to_host(), x.astype(np.int32))


@scriptc.script
def show(x: np.ndarray) -> None:
    print("x is", x * 2.0)


def test_printing_a_device_array_prints_what_the_host_prints(emulator, capsys):
    x = np.arange(4.0)
    show(cuda.to_device(x))
    on_device = capsys.readouterr().out
    show.py_func(x)
    assert on_device == capsys.readouterr().out


def test_mixing_host_and_device_arrays_is_refused(emulator):
    with pytest.raises(GpuUnsupported, match="reads host and device arrays"):
        accumulate(cuda.to_device(np.zeros((2, 3))), np.ones(3), 1.0)


def test_graph_for_marks_each_array_operator_as_a_kernel(emulator):
    from tests.util import filecheck

    filecheck(
        str(copies.graph_for(cuda.to_device(np.ones((2, 2))))),
        """
    CHECK: prim::FusionGroup[{{.*}}device="cuda"]
    CHECK: prim::FusionGroup[{{.*}}into=0{{.*}}device="cuda"]
    CHECK: prim::FusionGroup[{{.*}}device="cuda"]
    """,
    )


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
def test_axis_reduction_and_write_kernels_assemble(tmp_path):
    for fn, args in (
        (column_stats, (np.ones((3, 2)),)),
        (accumulate, (np.ones((2, 3)), np.ones(3), 1.0)),
        (copies, (np.ones(3),)),
    ):
        ptx = fn.inspect_ptx(*args, arch="sm_90")
        (tmp_path / "k.ptx").write_text(ptx)
        run = subprocess.run(
            [PTXAS, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
