"""Multi-output fusion groups as GPU kernels, and no silent host fallback.

The fusion pass merges sibling consumers of one producer into one group with several results (``err = a*x + b
- y; return np.mean(err * x), np.mean(err)``). On the device that group is one kernel: every element-wise
result stored in the same grid-stride loop, every full reduction accumulated per thread, combined per block
through the same shuffle/shared-memory tree and finished together; the scalars come back in one synchronous
copy. The emulator runs it for several block sizes against NumPy (reductions within rounding: the blocks add in
another order than NumPy's pairwise sums) and ptxas assembles it. A device whose copies to the host are counted
shows that nothing ran on the host behind the user's back."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import scriptc
import scriptc.cuda as cuda
from scriptc.backend.nvptx import GpuUnsupported, ptxas_path
from tests.gpu_support import to_device, to_host
from tests.util import returned_type

PTXAS = ptxas_path()
rng = np.random.default_rng(21)


@scriptc.script
def fit_step(a: float, b: float, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    err = a * x + b - y
    return np.mean(err * x), np.mean(err)


@scriptc.script
def two_arrays(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = x * y + 1.0
    return t * 2.0, t - x


@scriptc.script
def array_and_sum(x: np.ndarray) -> tuple[np.ndarray, float]:
    t = np.exp(-x * x)
    return t + 1.0, np.sum(t)


@scriptc.script
def residual_and_stats(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    r = x - y  # read again after the group: the group's third result
    s = np.sum(r * r)
    m = np.max(r)
    return r, s, m, np.min(r)


@scriptc.script
def int_stats(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, int, int, float]:
    t = a * k + b
    return t % 5, np.sum(t), np.max(t), np.mean(t)


@scriptc.script
def flags(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, bool, bool]:
    d = x - y
    return d * 2.0, np.any(d > 1.0), np.all(d > -5.0)


@scriptc.script
def row_centred(x: np.ndarray, row: np.ndarray) -> tuple[float, float, np.ndarray]:
    d = x - row  # row broadcasts: the strided loop
    return np.sum(d * d), np.prod(d * 0.5 + 1.0), d * d


MULTI = [
    (fit_step, lambda n, dt: (0.5, -0.25, rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt))),
    (two_arrays, lambda n, dt: (rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt))),
    (array_and_sum, lambda n, dt: (rng.standard_normal(n).astype(dt),)),
    (residual_and_stats, lambda n, dt: (rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt))),
    (int_stats, lambda n, dt: (rng.integers(-40, 40, n).astype("int32"), rng.integers(-40, 40, n).astype("int32"), 3)),
    (flags, lambda n, dt: (rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt))),
    (
        row_centred,
        lambda n, dt: (
            rng.standard_normal((max(n // 7, 1), 7)).astype(dt) * 0.1,
            rng.standard_normal(7).astype(dt) * 0.1,
        ),
    ),
]
IDS = [fn.__name__ for fn, _ in MULTI]


def _same(got, want, float32: bool):
    """Arrays element by element as NumPy computes them; reductions within rounding of NumPy's sums."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, float32)
        return
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6 if float32 else 1e-14, atol=1e-7 if float32 else 1e-15)
        else:
            np.testing.assert_array_equal(got, want)
        return
    assert type(got) is returned_type(want)
    want = want.item() if isinstance(want, np.generic) else want
    assert got == pytest.approx(want, rel=1e-5 if float32 else 1e-12, abs=1e-6 if float32 else 1e-12)


def test_each_multi_output_group_is_one_kernel():
    """The functions above really are multi-output groups: one group of several results, on the device."""
    cuda.use_emulator()
    try:
        for fn, make in MULTI:
            args = to_device(make(10, "float64"))
            groups = [line for line in str(fn.graph_for(*args)).splitlines() if "prim::FusionGroup[" in line]
            assert len(groups) == 1 and groups[0].split("=")[0].count(":") > 1, (fn.__name__, groups)
            assert 'device="cuda"' in groups[0]
            scalars = any(not isinstance(v, np.ndarray) for v in fn.py_func(*make(10, "float64")))
            assert ('copy="device_to_host"' in groups[0]) == scalars, groups[0]
    finally:
        cuda.use_emulator(False)


def _sizes_and_blocks():
    """Every size at every block size; 1,000 elements in blocks of 128 (eight blocks of 128 host threads
    meeting at barriers, on two cores in the emulator: seconds) only in `make test-slow`: blocks of 100 and 32
    cover several full blocks."""
    for n in (1, 7, 1000):
        for block in (1, 32, 128, 100):
            yield pytest.param(
                n, block, marks=[pytest.mark.slow] if (n, block) == (1000, 128) else [], id=f"{n}-{block}"
            )


@pytest.mark.parametrize("n, block", _sizes_and_blocks())
@pytest.mark.parametrize("fn, make", MULTI, ids=IDS)
def test_multi_output_groups_match_numpy(counting, fn, make, n, block):
    cuda.set_block_size(block)
    for dtype in ("float64", "float32"):
        args = make(n, dtype)
        want = fn.py_func(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        device_args = to_device(args)
        counting.to_host.clear()
        got = fn(*device_args)
        copies = list(counting.to_host)
        scalars = [w for w in want if not isinstance(w, np.ndarray)]
        # a kernel, not the host: at most one copy to the host (the scalars, 8 bytes each) for the whole call
        assert copies == ([8 * len(scalars)] if scalars else []), copies
        arrays = [g for g in got if isinstance(g, cuda.DeviceArray)]
        assert len(arrays) == len(want) - len(scalars)
        _same(to_host(got), want, dtype == "float32")
        cpu = fn(*args)
        for g, c in zip(to_host(got), cpu):  # and the CPU backend: the arrays bit for bit
            if isinstance(c, np.ndarray):
                np.testing.assert_array_equal(g, c)


def test_an_error_in_a_multi_output_kernel_raises_and_the_blocks_still_finish(counting):
    a = np.arange(50, dtype=np.int32)
    with pytest.raises(OverflowError) as cpu:
        int_stats(a, a, 2**40)
    cuda.set_block_size(32)
    with pytest.raises(OverflowError) as gpu:
        int_stats(cuda.to_device(a), cuda.to_device(a), 2**40)
    assert str(gpu.value) == str(cpu.value)
    got = to_host(int_stats(cuda.to_device(a), cuda.to_device(a), 3))  # the flag was cleared
    _same(got, int_stats.py_func(a, a, 3), False)


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_empty_multi_output_groups_give_numpys_identities_and_errors(counting):
    empty = np.zeros(0)
    got = fit_step(1.0, 0.0, cuda.to_device(empty), cuda.to_device(empty))
    assert all(np.isnan(v) for v in got)
    d, s = array_and_sum(cuda.to_device(empty))
    assert isinstance(d, cuda.DeviceArray) and d.shape == (0,) and s == 0.0
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        residual_and_stats(cuda.to_device(empty), cuda.to_device(empty))
    assert counting.to_host == []  # nothing to read: the host ran on empty stand-ins


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("fn, make", MULTI, ids=IDS)
def test_multi_output_kernels_assemble(tmp_path, fn, make, arch):
    args = make(4, "float64")
    ptx = fn.inspect_ptx(*args, arch=arch)
    reduces = any(not isinstance(v, np.ndarray) for v in fn.py_func(*args))
    assert ptx.count(".entry") == (2 if reduces else 1)
    (tmp_path / "k.ptx").write_text(ptx)
    run = subprocess.run(
        [PTXAS, f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


# -- no silent host fallback -----------------------------------------------------------------------------------


@scriptc.script
def sibling_means(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    err = x * 0.5 - y
    return np.mean(err * x), np.mean(err)


def test_a_group_without_a_kernel_is_refused_not_run_on_the_host(counting, monkeypatch):
    """Were a group's kernel missing (a kind this version cannot compile), the call must raise GpuUnsupported
    naming the group's operators and line, without copying the operands to the host and running it there (as
    multi-output groups did before they were kernels)."""
    from scriptc.backend.nvptx import executor, program

    real = program.runs_on_gpu
    for module in (executor, program):  # where groups are marked, and where kernels are made
        monkeypatch.setattr(module, "runs_on_gpu", lambda n: real(n) and len(n.outputs) < 2)
    x = cuda.to_device(rng.standard_normal(20))
    with pytest.raises(GpuUnsupported, match=r"fusion group \(aten::mul.*aten::mean\) at test_gpu_multi.py:\d+"):
        sibling_means(x, x)
    assert counting.to_host == []


@scriptc.script
def many_operators(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    c = x.copy()
    c += y
    c[0] = 2.0
    z = np.sum(c.reshape((4, 5)), axis=1)
    p = w @ w.T
    t = x * y
    return z + 1.0, np.sum(t) + p[0, 0], np.maximum(t, 0.0)


def test_array_operators_copy_nothing_but_scalars_to_the_host(counting):
    """Copies, writes, an axis reduction, a matrix product, a multi-output group and views: the only copies
    to the host are the scalars the host code reads (the reduction's result, ``p[0, 0]``)."""
    x, y, w = rng.standard_normal(20), rng.standard_normal(20), rng.standard_normal((3, 6))
    got = many_operators(*to_device((x, y, w)))
    assert counting.to_host == [8, 8], counting.to_host
    want = many_operators.py_func(x.copy(), y, w)
    _same(to_host(got), want, False)


@scriptc.script
def prints_an_array(x: np.ndarray) -> np.ndarray:
    y = x * 2.0
    print(y)
    return y + 1.0


def test_printing_is_the_documented_whole_array_copy(counting, capsys):
    x = np.arange(5.0)
    prints_an_array(cuda.to_device(x))
    assert counting.to_host == [x.nbytes]
    assert capsys.readouterr().out == "[0. 2. 4. 6. 8.]\n"
