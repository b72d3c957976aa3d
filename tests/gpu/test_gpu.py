"""The NVPTX path without a GPU: every kernel the corpus generates is assembled by ptxas for sm_80 and sm_90, and
runs in the grid emulator (the same LLVM module compiled for the host) with several block sizes, matching the
CPU backend bit for bit and NumPy; host control flow around kernels; what is refused, and how."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import scriptc
import scriptc.cuda as cuda
from scriptc.backend.nvptx import GpuUnsupported, libdevice_path, ptxas_path

PTXAS = ptxas_path()


@scriptc.script
def chain(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * y) + a * x


@scriptc.script
def polynomial(x: np.ndarray) -> np.ndarray:
    return ((x * 0.5 - 1.25) * x + 3.0) * x - 0.125


@scriptc.script
def clipped(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.where(x < lo, lo, np.where(x > hi, hi, x))


@scriptc.script
def int_mix(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    return (a * k + b) % 7 - (a // 3)


@scriptc.script
def compare(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x > y) & (np.abs(x - y) < 0.5)


@scriptc.script
def math_mix(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.abs(x)) + np.tanh(x) * np.cos(x) - np.sqrt(x * x + 1.0)


@scriptc.script
def relax(x: np.ndarray, steps: int) -> np.ndarray:
    for i in range(steps):
        x = x * 0.5 + i
    print("first", x[0, 0])
    return x


@scriptc.script
def not_elementwise(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x)


rng = np.random.default_rng(3)
CASES = [
    (chain, (rng.standard_normal((37, 5)), rng.standard_normal(5), 0.5)),
    (chain, (rng.standard_normal((4, 129)).astype(np.float32), rng.standard_normal(129).astype(np.float32), 2.0)),
    (polynomial, (rng.standard_normal(1000),)),
    (polynomial, (rng.standard_normal((3, 4, 5)).astype(np.float32),)),
    (clipped, (rng.standard_normal(300), -0.5, 0.75)),
    (int_mix, (rng.integers(-50, 50, 211), rng.integers(-50, 50, 211), 3)),
    (int_mix, (rng.integers(-50, 50, (9, 1)).astype(np.int32), rng.integers(-50, 50, 12).astype(np.int32), -2)),
    (compare, (rng.standard_normal(64), rng.standard_normal(64))),
    (math_mix, (rng.standard_normal((16, 16)),)),
]
IDS = [f"{fn.__name__}-{'-'.join(str(a.dtype) for a in args if isinstance(a, np.ndarray))}" for fn, args in CASES]


@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit, or the nvidia-cuda-nvcc package) not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_ptx_assembles(tmp_path, fn, args, arch):
    if libdevice_path() is None and fn in (chain, math_mix):
        pytest.skip("libdevice not found")
    ptx = fn.inspect_ptx(*args, arch=arch)
    assert ptx.count(".entry") == 1 and f".target {arch}" in ptx
    assert ".extern .func __nv_" not in ptx  # libdevice is linked in, not left to the driver
    (tmp_path / "k.ptx").write_text(ptx)
    run = subprocess.run(
        [PTXAS, f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("block", [1, 32, 128, 100])
@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_emulated_kernels_match_cpu_and_numpy(emulator, fn, args, block):
    cuda.set_block_size(block)
    device_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    result = fn(*device_args)
    assert isinstance(result, cuda.DeviceArray)
    got = result.copy_to_host()
    expected = fn.py_func(*args)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if fn in (chain, math_mix):  # the CPU's vectorized loops call libmvec (within 4 ulp), the emulator libm
        np.testing.assert_allclose(got, fn(*args), rtol=1e-14 if got.dtype == np.float64 else 1e-6)
    else:
        np.testing.assert_array_equal(got, fn(*args))  # the CPU backend, bit for bit
    if got.dtype == np.float32:  # float32 math (NumPy's own routines vs libm rounded) differs in last bits
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_host_control_flow_around_kernels(emulator, capsys):
    x = rng.standard_normal((6, 3))
    got = relax(cuda.to_device(x), 4).copy_to_host()
    printed = capsys.readouterr().out
    expected = relax.py_func(x.copy(), 4)
    assert printed.startswith("first ") and capsys.readouterr().out == printed
    np.testing.assert_array_equal(got, expected)


def test_what_does_not_run_on_the_gpu_yet_is_refused_with_the_line(emulator):
    with pytest.raises(GpuUnsupported, match=r"aten::cumsum at test_gpu.py:\d+:\d+ on a device array"):
        not_elementwise(cuda.to_device(np.arange(5.0)))


def test_device_arrays(emulator):
    a = np.arange(12.0).reshape(3, 4)
    d = cuda.to_device(a)
    assert (d.shape, d.dtype, d.ndim, len(d)) == ((3, 4), np.float64, 2, 3)
    np.testing.assert_array_equal(d.copy_to_host(), a)
    assert d[1, 2] == a[1, 2]
    with pytest.raises(TypeError, match="copy_to_host"):
        np.asarray(d)
    e = cuda.device_array((2, 5), np.float32)
    assert e.shape == (2, 5) and e.dtype == np.float32


def test_without_the_emulator_device_arrays_need_a_driver():
    cuda.use_emulator(False)
    if cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="use_emulator"):
        cuda.to_device(np.zeros(3))


def test_dump_prints_ptx(tmp_path):
    import sys

    src = tmp_path / "k.py"
    src.write_text(
        "import numpy as np\nimport scriptc\n@scriptc.script\ndef f(x: np.ndarray) -> np.ndarray:\n"
        "    return x * 2.0 + 1.0\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "scriptc",
            "dump",
            f"{src}:f",
            "--target=cuda",
            "--emit=ptx",
            "--types",
            "float32[*]",
            "--arch",
            "sm_90",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ".target sm_90" in out.stdout and out.stdout.count(".entry") == 1


def test_an_error_in_a_kernel_raises_on_the_host(emulator):
    a = np.arange(5, dtype=np.int32)
    with pytest.raises(OverflowError) as cpu:
        int_mix(a, a, 2**40)
    with pytest.raises(OverflowError) as gpu:
        int_mix(cuda.to_device(a), cuda.to_device(a), 2**40)
    assert str(gpu.value) == str(cpu.value)
    np.testing.assert_array_equal(
        int_mix(cuda.to_device(a), cuda.to_device(a), 2).copy_to_host(), int_mix(a, a, 2)
    )  # the flag was cleared


def test_graph_for_device_arguments_shows_where_nodes_run(emulator):
    from tests.util import filecheck

    graph = relax.graph_for(cuda.to_device(np.ones((3, 2))), 4)
    filecheck(
        str(graph),
        """
    CHECK: prim::Loop
    CHECK: prim::FusionGroup[{{.*}}device="cuda"]
    CHECK: aten::getitem[copy="device_to_host"]
    CHECK: prim::Print
    """,
    )
    assert 'device="cuda"' not in str(relax.graph_for(np.ones((3, 2)), 4))


@scriptc.script
def lone_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def test_a_lone_operator_is_a_kernel_of_its_own(emulator):
    a, b = np.arange(7.0), np.arange(7.0)[::-1].copy()
    np.testing.assert_array_equal(lone_add(cuda.to_device(a), cuda.to_device(b)).copy_to_host(), a + b)
    assert 'device="cuda"' in str(lone_add.graph_for(cuda.to_device(a), cuda.to_device(b)))


@pytest.mark.parametrize("n", [1, 3, 4, 1001])
def test_the_three_kernel_loops_agree(emulator, monkeypatch, n):
    """VECTORS (aligned, contiguous), CONTIGUOUS (one operand misaligned, or broadcast), STRIDED (a broadcast
    row): every loop and the vector loop's tail."""
    from scriptc.backend.nvptx import executor

    chosen = []
    pick = executor._mode
    monkeypatch.setattr(executor, "_mode", lambda *a: chosen.append(pick(*a)) or chosen[-1])
    x = rng.standard_normal(n)
    base = cuda.to_device(np.concatenate([[0.0], x]))
    shifted = cuda.DeviceArray._make(base._device, (n,), np.float64, pointer=base.pointer + 8, owner=base)
    one = cuda.to_device(np.array([2.5]))
    for a, b in ((cuda.to_device(x), cuda.to_device(x)), (shifted, cuda.to_device(x)), (cuda.to_device(x), one)):
        np.testing.assert_array_equal(lone_add(a, b).copy_to_host(), x + (x if b is not one else 2.5))
    column = cuda.to_device(x.reshape(n, 1))
    np.testing.assert_array_equal(lone_add(column, cuda.to_device(x)).copy_to_host(), x.reshape(n, 1) + x)
    assert chosen == [2, 1, 1, 0] if n > 1 else chosen[:3] == [2, 1, 2]


def test_emulated_arrays_export_through_dlpack(emulator):
    d = polynomial(cuda.to_device(np.arange(6.0)))
    np.testing.assert_array_equal(np.from_dlpack(d), polynomial(np.arange(6.0)))
    with pytest.raises(AttributeError, match="host memory"):
        d.__cuda_array_interface__


@scriptc.script
def sum_of_squares(x: np.ndarray) -> float:
    return np.sum(x * x + 1.0)


@scriptc.script
def largest_magnitude(x: np.ndarray) -> float:
    return np.max(np.abs(x))


@scriptc.script
def count_above(x: np.ndarray, t: float) -> int:
    return np.sum(x > t)


@scriptc.script
def any_below(x: np.ndarray, t: float) -> bool:
    return np.any(x < t)


@scriptc.script
def mean_scaled(x: np.ndarray, y: np.ndarray) -> float:
    return np.mean(x * y)


@scriptc.script
def int_total(a: np.ndarray, k: int) -> int:
    return np.sum(a * k)


REDUCTIONS = [
    (sum_of_squares, ()),
    (largest_magnitude, ()),
    (count_above, (0.5,)),
    (any_below, (-2.0,)),
    (any_below, (-9.0,)),
]


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_reduction_kernels_assemble(tmp_path, arch):
    x = np.ones(3)
    ptx = sum_of_squares.inspect_ptx(x, arch=arch)
    assert ptx.count(".entry") == 2 and "bar.sync" in ptx and ".shared" in ptx
    (tmp_path / "r.ptx").write_text(ptx)
    run = subprocess.run(
        [PTXAS, f"-arch={arch}", str(tmp_path / "r.ptx"), "-o", str(tmp_path / "r.cubin")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


@scriptc.script
def five_point(a: np.ndarray) -> np.ndarray:
    h, w = a.shape
    out = np.zeros((h, w))
    for i in scriptc.prange(1, h - 1):
        for j in range(1, w - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    return out


@scriptc.script
def host_only(n: int) -> int:
    return n * 2


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
def test_inspect_ptx_and_dump_print_a_prange_nest(tmp_path):
    """The kernels that run, prange loops included (both printed nothing for a prange nest), and a line saying
    so where nothing runs on the device."""
    a = np.ones((6, 5))
    ptx = five_point.inspect_ptx(a, arch="sm_90")
    import re

    assert re.search(r"\.visible \.entry scriptc_gpu\d+_five_point_prange0\(", ptx) and ".target sm_90" in ptx
    (tmp_path / "p.ptx").write_text(ptx)
    run = subprocess.run(
        [PTXAS, "-arch=sm_90", str(tmp_path / "p.ptx"), "-o", str(tmp_path / "p.cubin")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert host_only.inspect_ptx(3) == (
        "// no kernels: nothing in host_only runs on the GPU for these argument types (host code only)\n"
    )
    import sys

    src = tmp_path / "stencil.py"
    src.write_text(
        "import numpy as np\nimport scriptc\n\n\n@scriptc.script\n"
        + five_point.source.text
        + "\n\n@scriptc.script\ndef host_only(n: int) -> int:\n    return n * 2\n"
    )
    dump = [sys.executable, "-m", "scriptc", "dump", "--target=cuda", "--emit=ptx"]
    out = subprocess.run(dump + [f"{src}:five_point", "--types", "float64[*,*]"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.count(".entry") == 1 and "_prange0(" in out.stdout
    out = subprocess.run(dump + [f"{src}:host_only", "--types", "int"], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == "" and "no kernels: nothing in host_only runs on the GPU" in out.stderr


@pytest.mark.parametrize("block", [1, 32, 100])
@pytest.mark.parametrize("n", [1, 5, 777])
def test_emulated_reductions_match_numpy(emulator, block, n):
    """Per-block results through shared memory and barriers (one host thread per GPU thread), then the second
    pass; floats within rounding of NumPy's pairwise sums, the rest exact."""
    cuda.set_block_size(block)
    x = np.random.default_rng(n).standard_normal(n)
    for fn, extra in REDUCTIONS:
        got, expected = fn(cuda.to_device(x), *extra), fn.py_func(x, *extra)
        assert type(got) is type(expected.item() if isinstance(expected, np.generic) else expected)
        assert got == pytest.approx(expected, rel=1e-12)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    assert mean_scaled(cuda.to_device(x), cuda.to_device(y)) == pytest.approx(mean_scaled.py_func(x, y), rel=1e-12)


def test_an_error_in_a_reduction_kernel_raises_and_the_block_still_finishes(emulator):
    a = np.arange(50, dtype=np.int32)
    with pytest.raises(OverflowError) as cpu:
        int_total(a, 2**40)
    cuda.set_block_size(32)
    with pytest.raises(OverflowError) as gpu:
        int_total(cuda.to_device(a), 2**40)
    assert str(gpu.value) == str(cpu.value)
    assert int_total(cuda.to_device(a), 3) == int_total(a, 3)


def test_an_empty_reduction_raises_as_numpy_does(emulator):
    with pytest.raises(ValueError, match="zero-size array"):
        largest_magnitude(cuda.to_device(np.zeros(0)))
    assert sum_of_squares(cuda.to_device(np.zeros(0))) == 0.0


@scriptc.script
def pairwise(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    out = np.empty((n, n))
    for i in scriptc.prange(n):
        for j in range(n):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - x[j, k]
                d += t * t
            out[i, j] = np.sqrt(d)
    return out


@scriptc.script
def dot_and_extremes(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    s = 1.5
    hi = -1.0
    count = 0
    for i in scriptc.prange(x.shape[0]):
        s += x[i] * y[i]
        hi = max(hi, x[i])
        if y[i] > 0.0:
            count += 1
    return s, hi, count


@scriptc.script
def shifted_write(x: np.ndarray, k: int) -> None:
    for i in scriptc.prange(x.shape[0]):
        x[i + k] = 1.0


@scriptc.script
def creates_in_body(x: np.ndarray) -> None:
    for i in scriptc.prange(x.shape[0]):
        x[i] = np.sum(np.zeros(3) + x[i])


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
def test_prange_kernels_assemble(tmp_path):
    from scriptc.backend.nvptx.executor import GpuProgram

    cuda.use_emulator()
    try:
        for fn, args in ((pairwise, (np.ones((3, 2)),)), (dot_and_extremes, (np.ones(3), np.ones(3)))):
            program = GpuProgram(fn.gpu_graph_for_types(fn._bind(args, {})[0]), cuda.current_device())
            from scriptc.backend.nvptx.ptx import compile_ptx

            ptx = compile_ptx(program.km.llvm_ir(), "sm_90")
            (tmp_path / "p.ptx").write_text(ptx)
            run = subprocess.run(
                [PTXAS, "-arch=sm_90", str(tmp_path / "p.ptx"), "-o", str(tmp_path / "p.cubin")],
                capture_output=True,
                text=True,
            )
            assert run.returncode == 0, run.stderr
    finally:
        cuda.use_emulator(False)


@pytest.mark.parametrize("block", [1, 32, 100])
def test_emulated_prange_loops_match_the_cpu(emulator, block):
    """One iteration per GPU thread; arrays created in the function are device arrays; reductions per block,
    then the finishing kernel, then the value before the loop."""
    cuda.set_block_size(block)
    x = rng.standard_normal((37, 3))
    np.testing.assert_allclose(pairwise(cuda.to_device(x)).copy_to_host(), pairwise(x), rtol=1e-15)
    a, b = rng.standard_normal(301), rng.standard_normal(301)
    got, expected = dot_and_extremes(cuda.to_device(a), cuda.to_device(b)), dot_and_extremes.py_func(a, b)
    assert got[0] == pytest.approx(expected[0], rel=1e-13) and got[1:] == expected[1:]


def test_an_index_out_of_bounds_in_a_prange_kernel_raises_index_error(emulator):
    with pytest.raises(IndexError) as cpu:
        shifted_write(np.zeros(10), 1)
    with pytest.raises(IndexError) as gpu:
        shifted_write(cuda.to_device(np.zeros(10)), 1)
    assert str(gpu.value) == str(cpu.value)
    d = cuda.to_device(np.zeros(10))
    shifted_write(d, 0)
    np.testing.assert_array_equal(d.copy_to_host(), np.ones(10))


def test_array_creation_in_a_prange_body_is_refused(emulator):
    with pytest.raises(GpuUnsupported, match="creating arrays inside a prange body"):
        creates_in_body(cuda.to_device(np.zeros(4)))


def test_graph_for_shows_a_prange_loop_and_created_arrays_on_the_device(emulator):
    from tests.util import filecheck

    filecheck(
        str(pairwise.graph_for(cuda.to_device(np.ones((3, 2))))),
        """
    CHECK: aten::empty[{{.*}}device="cuda"]
    CHECK: prim::Loop[parallel=1, reduce=[], device="cuda"]
    CHECK-NOT: copy="device_to_host"
    """,
    )


@scriptc.script
def pairwise_grid(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    out = np.empty((n, n))
    for i in scriptc.prange(n):
        for j in scriptc.prange(n):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - x[j, k]
                d += t * t
            out[i, j] = np.sqrt(d)
    return out


@scriptc.script
def fill_3d(out: np.ndarray, scale: int) -> None:
    for i in scriptc.prange(out.shape[0]):
        for j in scriptc.prange(out.shape[1]):
            for k in scriptc.prange(out.shape[2]):
                out[i, j, k] = (i * 100 + j * 10 + k) * scale


def test_prange_nests_are_one_flattened_grid(emulator):
    from scriptc.backend.nvptx.executor import GpuProgram

    for fn, args, depth in ((pairwise_grid, (np.ones((3, 2)),), 2), (fill_3d, (np.zeros((2, 2, 2)), 1), 3)):
        program = GpuProgram(fn.gpu_graph_for_types(fn._bind(args, {})[0]), cuda.current_device())
        assert [len(k.nest) for k in program.loops.values()] == [depth]


@pytest.mark.parametrize("block", [1, 32, 100])
@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 7, 1), (2, 0, 3), (0, 2, 2)])
def test_emulated_prange_nests_match_the_cpu(emulator, block, shape):
    cuda.set_block_size(block)
    x = rng.standard_normal((shape[0] + shape[1], 3))
    np.testing.assert_allclose(pairwise_grid(cuda.to_device(x)).copy_to_host(), pairwise(x), rtol=1e-15)
    d, e = cuda.to_device(np.zeros(shape)), np.zeros(shape)
    fill_3d(d, 3)
    fill_3d(e, 3)
    np.testing.assert_array_equal(d.copy_to_host(), e)
