"""The NVPTX path on a real GPU, through the CUDA driver (marked ``gpu``: skipped where there is no device;
``make test-gpu`` runs them): the corpus' kernels against NumPy and the emulator, host control flow, scalar reads,
errors raised by kernels and by the driver, the caching allocator, and arrays shared with CuPy and PyTorch
without copies; multi-output groups and matrix products (added after the last run on hardware)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
import scriptc.cuda as cuda
from tests.gpu_support import to_host
from tests.gpu.test_gpu import CASES, IDS, chain, int_mix, math_mix, relax, sum_of_squares
from tests.gpu.test_gpu_matmul import (
    DOT_SHAPES as PRODUCT_DOT_SHAPES,
    SHAPES as PRODUCT_SHAPES,
    dot as product_dot,
    in_order,
    matmul as product_matmul,
)
from tests.gpu.test_gpu_multi import IDS as MULTI_IDS, MULTI, _same as same_within_rounding

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")]


@pytest.fixture(autouse=True)
def on_the_gpu():
    cuda.use_emulator(False)
    yield
    cuda.set_block_size(256)


def close_to_numpy(got, expected, libdevice: bool):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected)
    elif libdevice:  # libdevice's exp/sin/... are within 2 ulp, not correctly rounded
        np.testing.assert_allclose(got, expected, rtol=1e-14 if got.dtype == np.float64 else 2e-6, atol=1e-6)
    else:  # + - * / are IEEE on the GPU too: bit for bit
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("block", [32, 128, 100, 1024])
@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_kernels_match_numpy(fn, args, block):
    cuda.set_block_size(block)
    result = fn(*[cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args])
    assert isinstance(result, cuda.DeviceArray) and result.device == "cuda"
    close_to_numpy(result.copy_to_host(), fn(*args), libdevice=fn in (chain, math_mix))


@pytest.mark.parametrize("n", [1, 31, 1000, 3_000_001])
def test_contiguous_and_strided_loops_agree(n):
    x = np.random.default_rng(n).standard_normal(n)
    row = np.random.default_rng(1).standard_normal((1, n))
    np.testing.assert_array_equal(polynomial2(cuda.to_device(x)).copy_to_host(), polynomial2(x))
    column = cuda.to_device(np.ones((3, 1)))  # broadcast: the strided loop
    got = add(column, cuda.to_device(row)).copy_to_host()
    np.testing.assert_array_equal(got, np.ones((3, 1)) + row)


@scriptc.script
def polynomial2(x: np.ndarray) -> np.ndarray:
    return (x * 0.5 - 1.25) * x + 3.0


@scriptc.script
def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def test_host_control_flow_and_scalar_reads(capsys):
    x = np.random.default_rng(0).standard_normal((6, 3))
    got = relax(cuda.to_device(x), 4).copy_to_host()
    printed = capsys.readouterr().out
    np.testing.assert_array_equal(got, relax.py_func(x.copy(), 4))
    assert printed == f"first {float(relax.py_func(x.copy(), 4)[0, 0])!r}\n"
    d = cuda.to_device(x)
    assert d[2, 1] == x[2, 1] and d[-1, -1] == x[-1, -1]
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        d[6, 0]


def test_an_error_in_a_kernel_raises_on_the_host():
    a = np.arange(5, dtype=np.int32)
    with pytest.raises(OverflowError) as cpu:
        int_mix(a, a, 2**40)
    with pytest.raises(OverflowError) as gpu:
        int_mix(cuda.to_device(a), cuda.to_device(a), 2**40)
    assert str(gpu.value) == str(cpu.value)
    np.testing.assert_array_equal(int_mix(cuda.to_device(a), cuda.to_device(a), 2).copy_to_host(), int_mix(a, a, 2))


def test_a_driver_error_names_the_kernel_and_the_line():
    from scriptc.backend.nvptx.driver import CudaError
    from scriptc.backend.nvptx.executor import GpuProgram

    x = cuda.to_device(np.ones(4))
    add(x, x)
    program = next(iter(add._gpu.values()))
    assert isinstance(program, GpuProgram)
    kernel = next(iter(program.kernels.values()))
    with pytest.raises(CudaError, match=rf"launching {kernel.name} \(the fusion group at test_gpu_device.py:\d+"):
        program.module.launch(kernel, 1, 2048, [x.pointer, 4, 1, 4, x.pointer, 1, x.pointer, 1])


def test_the_caching_allocator_reuses_freed_blocks():
    cuda.synchronize()
    d = cuda.device_array(1000, np.float32)
    pointer = d.pointer
    before = cuda.memory_stats()
    del d
    after_free = cuda.memory_stats()
    assert after_free["cached"] >= before["cached"] + 4000 and after_free["allocated"] <= before["allocated"] - 4000
    e = cuda.device_array(1000, np.float32)
    assert e.pointer == pointer and cuda.memory_stats()["reused"] == before["reused"] + 1
    del e
    cuda.empty_cache()
    assert cuda.memory_stats()["cached"] == 0


def test_arrays_pass_to_and_from_cupy_without_copies():
    cupy = pytest.importorskip("cupy")
    c = cupy.arange(12, dtype=cupy.float64).reshape(3, 4)
    d = cuda.to_device(c)
    assert d.pointer == c.data.ptr and d.shape == (3, 4)
    out = polynomial2(c)  # a CuPy array straight into a scripted function
    back = cupy.asarray(out)  # and out, through __cuda_array_interface__
    assert back.data.ptr == out.pointer
    np.testing.assert_array_equal(cupy.asnumpy(back), polynomial2(np.arange(12.0).reshape(3, 4)))
    t = cupy.from_dlpack(out)
    assert t.data.ptr == out.pointer
    transposed = c.T  # strided, not contiguous: the strided loop
    np.testing.assert_array_equal(polynomial2(transposed).copy_to_host(), polynomial2(cupy.asnumpy(transposed)))
    np.testing.assert_array_equal(cuda.to_device(transposed).copy_to_host(), cupy.asnumpy(transposed))


def test_tensors_pass_to_and_from_torch_without_copies():
    torch = pytest.importorskip("torch")
    t = torch.linspace(-2, 2, 1001, device="cuda", dtype=torch.float32)
    out = polynomial2(t)
    assert out.dtype == np.float32
    back = torch.from_dlpack(out)
    assert back.data_ptr() == out.pointer and back.device.type == "cuda"
    np.testing.assert_array_equal(back.cpu().numpy(), polynomial2(t.cpu().numpy()))
    via_cai = torch.as_tensor(out, device="cuda")
    assert via_cai.data_ptr() == out.pointer
    del back, via_cai, out
    import gc

    gc.collect()


@pytest.mark.parametrize("block", [32, 100, 256, 1024])
@pytest.mark.parametrize("n", [1, 777, 3_000_001])
def test_reductions_match_numpy(block, n):
    from tests.gpu.test_gpu import REDUCTIONS

    cuda.set_block_size(block)
    x = np.random.default_rng(n).standard_normal(n)
    d = cuda.to_device(x)
    for fn, extra in REDUCTIONS:
        got, expected = fn(d, *extra), fn.py_func(x, *extra)
        assert got == pytest.approx(expected, rel=1e-12)
    f32 = cuda.to_device(x.astype(np.float32))  # float32 elements, accumulated in double on the device
    assert sum_of_squares(f32) == pytest.approx(sum_of_squares.py_func(x.astype(np.float32)), rel=1e-6)


def test_reductions_are_deterministic():
    d = cuda.to_device(np.random.default_rng(0).standard_normal(10_000_000))
    first = sum_of_squares(d)
    assert all(sum_of_squares(d) == first for _ in range(5))


def test_a_reduction_error_raises_on_the_host():
    from tests.gpu.test_gpu import int_total

    a = np.arange(5000, dtype=np.int32)
    with pytest.raises(OverflowError):
        int_total(cuda.to_device(a), 2**40)
    assert int_total(cuda.to_device(a), 3) == int_total(a, 3)


@pytest.mark.parametrize("block", [32, 100, 256])
def test_prange_loops_on_the_gpu(block):
    from tests.gpu.test_gpu import dot_and_extremes, pairwise

    cuda.set_block_size(block)
    rng = np.random.default_rng(block)
    x = rng.standard_normal((500, 3))
    np.testing.assert_allclose(pairwise(cuda.to_device(x)).copy_to_host(), pairwise(x), rtol=1e-13)
    a, b = rng.standard_normal(1_000_003), rng.standard_normal(1_000_003)
    got, expected = dot_and_extremes(cuda.to_device(a), cuda.to_device(b)), dot_and_extremes.py_func(a, b)
    assert got[0] == pytest.approx(expected[0], rel=1e-10) and got[1:] == expected[1:]


def test_an_index_out_of_bounds_in_a_prange_kernel_raises_index_error():
    from tests.gpu.test_gpu import shifted_write

    with pytest.raises(IndexError, match="index 100000 is out of bounds for axis 0 with size 100000"):
        shifted_write(cuda.to_device(np.zeros(100_000)), 1)
    d = cuda.to_device(np.zeros(100_000))
    shifted_write(d, 0)
    assert d.copy_to_host().sum() == 100_000


@pytest.mark.parametrize("block", [32, 100, 256])
def test_prange_nests_on_the_gpu(block):
    from tests.gpu.test_gpu import fill_3d, pairwise, pairwise_grid

    cuda.set_block_size(block)
    x = np.random.default_rng(block).standard_normal((700, 3))
    np.testing.assert_allclose(pairwise_grid(cuda.to_device(x)).copy_to_host(), pairwise(x), rtol=1e-13)
    for shape in ((30, 40, 50), (3, 0, 2)):
        d, e = cuda.to_device(np.zeros(shape)), np.zeros(shape)
        fill_3d(d, 7)
        fill_3d(e, 7)
        np.testing.assert_array_equal(d.copy_to_host(), e)


# -- added after the last hardware run: written for the GPU, run only in the emulator so far ---------------


@pytest.mark.parametrize("block", [32, 100, 256, 1024])
@pytest.mark.parametrize("fn, make", MULTI, ids=MULTI_IDS)
def test_multi_output_groups_on_the_gpu(fn, make, block):
    """One kernel per multi-output group (arrays and reductions together), as in the emulator (test_gpu_multi)."""
    cuda.set_block_size(block)
    for n in (7, 4099):
        for dtype in ("float64", "float32"):
            args = make(n, dtype)
            got = fn(*[cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args])
            same_within_rounding(to_host(got), fn.py_func(*args), dtype == "float32")


@pytest.mark.parametrize("block", [32, 100, 256, 1024])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_matrix_products_on_the_gpu(block, dtype):
    """The tiled product kernel: + and * are IEEE on the GPU, so floats are the in-order sums bit for bit."""
    cuda.set_block_size(block)
    rng = np.random.default_rng(block)
    for kind, fn, shapes in (
        ("matmul", product_matmul, PRODUCT_SHAPES + [((70, 65), (65, 33))]),
        ("dot", product_dot, PRODUCT_DOT_SHAPES),
    ):
        for sa, sb in shapes:
            a, b = ((rng.standard_normal(s) * 4).astype(dtype) for s in (sa, sb))
            got = to_host(fn(cuda.to_device(a), cuda.to_device(b)))
            np.testing.assert_array_equal(got, in_order(a, b, kind), err_msg=f"{kind} {sa} {sb}")
