"""Matrix products of device arrays (``@``, ``np.matmul``, ``np.dot``) as the tiled kernel of
backend/nvptx/matmul.py, in the grid emulator for block sizes 1, 32, 100 and 256: NumPy's shapes, dtypes and
errors; integer products exactly NumPy's; float products bit for bit the in-order sum in the dtype NumPy
accumulates in (float64, float32), hence within rounding of NumPy's BLAS; views without copies; PTX that
assembles."""

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
rng = np.random.default_rng(5)


@scriptc.script
def matmul(a: np.ndarray, b: np.ndarray):
    return a @ b


@scriptc.script
def dot(a: np.ndarray, b: np.ndarray):
    return np.dot(a, b)


@scriptc.script
def gram_views(a: np.ndarray, v: np.ndarray):
    return a.T @ a, a[::2, 1:] @ v[1:], v[::-1] @ a.T[:, ::-1], np.matmul(a[1:], a[1:].T)


@scriptc.script
def square(s: np.ndarray) -> np.ndarray:
    return s @ s  # one operand of the group, read as both sides


def in_order(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """The kernel's arithmetic on the host: every output its products added along k in order, in the dtype
    the kernel accumulates in (np.matmul's or np.dot's pairing of the operands' other dimensions)."""
    res = np.result_type(a, b)
    a2, b2 = a.astype(res), b.astype(res)
    if kind == "dot":
        lead = b.shape[:-2] + b.shape[-1:] if b.ndim >= 2 else ()
        out = np.empty(a.shape[:-1] + lead, res)
        for i in np.ndindex(*a.shape[:-1]):
            for j in np.ndindex(*lead):
                out[i + j] = _sum(a2[i], b2[j[:-1] + (slice(None), j[-1])] if b.ndim >= 2 else b2, res)
        return out
    x = a2 if a.ndim >= 2 else a2[None, :]
    y = b2 if b.ndim >= 2 else b2[:, None]
    shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    x, y = np.broadcast_to(x, shape[:-2] + x.shape[-2:]), np.broadcast_to(y, shape[:-2] + y.shape[-2:])
    out = np.empty(shape, res)
    for *batch, i, j in np.ndindex(*shape):
        out[(*batch, i, j)] = _sum(x[(*batch, i)], y[(*batch, slice(None), j)], res)
    out = out[..., 0, :] if a.ndim == 1 else out
    return out[..., 0] if b.ndim == 1 else out


def _sum(row, col, res):
    """One output: floats added in order in their dtype, integers in 64 bits then narrowed, bool as any."""
    res = np.dtype(res)
    if res.kind == "f":
        acc = res.type(0)
        for x, y in zip(row, col):
            acc = res.type(acc + x * y)
        return acc
    total = np.array(sum(int(x) * int(y) for x, y in zip(row, col)), np.int64)
    return total != 0 if res.kind == "b" else total.astype(res)


SHAPES = [
    ((3, 4), (4, 2)),
    ((4,), (4,)),
    ((5, 4), (4,)),
    ((4,), (4, 3)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((37, 45), (45, 29)),
    ((1, 5), (5, 1)),
    ((3, 0), (0, 2)),
    ((0, 3), (3, 2)),
]
DOT_SHAPES = [((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3), (3,)), ((6,), (2, 6, 3))]


@pytest.mark.parametrize("block", [1, 32, 100, 256])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int64"])
def test_products_match_numpy(counting, dtype, block):
    cuda.set_block_size(block)
    for fn, kind, shapes in ((matmul, "matmul", SHAPES), (dot, "dot", DOT_SHAPES)):
        for sa, sb in shapes:
            if block == 1 and max(sa + sb) > 30:  # one thread per block: 1073 blocks, slow in the emulator
                continue
            a, b = ((rng.standard_normal(s) * 4).astype(dtype) for s in (sa, sb))
            want = (np.matmul if kind == "matmul" else np.dot)(a, b)
            counting.to_host.clear()
            got = fn(*to_device((a, b)))
            scalar = not isinstance(want, np.ndarray)
            assert counting.to_host == ([np.dtype(dtype).itemsize] if scalar else []), (sa, sb)
            got = to_host(got)
            if scalar:
                assert type(got) is returned_type(want), (sa, sb)
            else:
                assert got.dtype == want.dtype and got.shape == want.shape, (sa, sb)
            if dtype.startswith("int"):
                np.testing.assert_array_equal(got, want)
                continue
            # the kernel's order exactly, and NumPy's BLAS within rounding of the sums
            np.testing.assert_array_equal(got, in_order(a, b, kind), err_msg=f"{sa} {sb}")
            k = sa[-1]
            bound = (
                2
                * max(k, 1)
                * np.finfo(dtype).eps
                * (
                    np.abs(a).astype(float) @ np.abs(b).astype(float)
                    if kind == "matmul"
                    else np.dot(np.abs(a).astype(float), np.abs(b).astype(float))
                )
            )
            assert np.all(np.abs(np.asarray(got, float) - np.asarray(want, float)) <= bound + 1e-300), (sa, sb)


@pytest.mark.parametrize("block", [32, 100])
def test_mixed_dtypes_and_bool_products_take_numpys_result_dtype(counting, block):
    cuda.set_block_size(block)
    cases = [
        (rng.integers(-9, 9, (4, 6)).astype(np.int32), rng.standard_normal((6, 3))),
        (rng.integers(-9, 9, (4, 6)).astype(np.int16), rng.standard_normal(6).astype(np.float32)),
        (rng.integers(-9, 9, (5, 6)).astype(np.int8), rng.integers(-9, 9, (6, 2)).astype(np.int64)),
        (rng.standard_normal((3, 5)) > 0.5, rng.standard_normal((5, 4)) > 0.0),
        (np.full((2, 70), 100, np.int8), np.full(70, 3, np.int8)),
    ]  # int8 sums wrap as NumPy's
    for a, b in cases:
        want = a @ b
        got = to_host(matmul(*to_device((a, b))))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(got, in_order(a, b, "matmul"))


@pytest.mark.parametrize("block", [32, 100])
def test_views_are_read_in_place(counting, block):
    cuda.set_block_size(block)
    a, v = rng.standard_normal((7, 9)), rng.standard_normal(9)
    got = gram_views(*to_device((a, v)))
    assert counting.to_host == []
    for g, w in zip(to_host(got), gram_views.py_func(a, v)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    s = rng.standard_normal((6, 6))
    assert "(%s)" in str(square.graph_for(cuda.to_device(s)))
    np.testing.assert_array_equal(square(cuda.to_device(s)).copy_to_host(), in_order(s, s, "matmul"))


def test_numpys_errors(counting):
    a, b = np.ones((3, 4)), np.ones((5, 2))
    for fn, ref in ((matmul, np.matmul), (dot, np.dot)):
        with pytest.raises(ValueError) as want:
            ref(a, b)
        with pytest.raises(ValueError) as got:
            fn(*to_device((a, b)))
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError) as want:
        np.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 2)))
    with pytest.raises(ValueError) as got:
        matmul(*to_device((np.ones((2, 3, 4)), np.ones((3, 4, 2)))))
    assert str(got.value) == str(want.value)
    assert counting.to_host == []


def test_float16_products_are_refused(counting):
    a = np.ones((2, 2), np.float16)
    with pytest.raises(GpuUnsupported, match="float16 matrix products at test_gpu_matmul.py"):
        matmul(*to_device((a, a)))


def test_graph_for_marks_the_product(counting):
    from tests.util import filecheck

    filecheck(
        str(matmul.graph_for(*to_device((np.ones(3), np.ones(3))))),
        """
    CHECK: prim::FusionGroup[{{.*}}device="cuda", copy="device_to_host"]
    CHECK: aten::matmul
    """,
    )
    filecheck(
        str(dot.graph_for(*to_device((np.ones((2, 3)), np.ones(3))))),
        """
    CHECK: Double(*) = prim::FusionGroup[{{.*}}device="cuda"]
    CHECK-NOT: copy=
    """,
    )


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    "a, b",
    [
        (np.ones((2, 3)), np.ones((3, 2))),
        (np.ones((2, 2, 3), np.float32), np.ones(3, np.float32)),
        (np.ones((2, 3), np.int32), np.ones((4, 3, 2), np.int16)),
    ],
    ids=["float64", "float32-batched", "int-batched"],
)
def test_product_kernels_assemble(tmp_path, a, b, arch):
    ptx = matmul.inspect_ptx(a, b, arch=arch)
    assert ptx.count(".entry") == 1 and "bar.sync" in ptx and "ld.shared" in ptx
    (tmp_path / "k.ptx").write_text(ptx)
    run = subprocess.run(
        [PTXAS, f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
