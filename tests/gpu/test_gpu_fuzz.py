"""The array fuzzer (tests/e2e/test_fuzz_arrays.py's Hypothesis-generated element-wise programs) through the GPU
path in the grid emulator, at block sizes 1, 32, 128 and 100 (which divides none of the sizes), against NumPy
running the same source.

Each generated program runs as generated (its arrays of 1 to 21 elements, often a host loop of kernel
launches), and in variants: its arrays stretched to 97 or 300 elements (several blocks, the vector loop's
tail), and returning ``z, np.sum(z * x), np.max(z)`` as well, which makes the fusion pass's multi-output groups
(an array and reductions in one kernel). Arrays must match as the CPU fuzzer's do (integers exactly, floats
within a few ulp: math calls are glibc's in the emulator); sums within rounding of NumPy's pairwise sums (the
blocks add in another order), maxima exactly the maxima of the arrays the GPU computed. Nothing may be refused
(GpuUnsupported) or copied to the host behind the user's back.

``SCRIPTC_FUZZ_GPU_EXAMPLES`` bounds the count (CI); the ``slow`` variant runs many more."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptc.cuda as cuda
import scriptc.backend.nvptx.device as device_module
from tests.gpu_support import COUNTING
from tests.modules import load_module
from tests.e2e.test_fuzz_arrays import close, program
from tests.util import returned_type, run_captured

EXAMPLES = int(os.environ.get("SCRIPTC_FUZZ_GPU_EXAMPLES", "20"))
BLOCKS = (1, 32, 128, 100)
_counter = itertools.count()


@st.composite
def gpu_program(draw):
    """(dtype, source, args) of the array fuzzer, maybe stretched, maybe also returning reductions."""
    dtype, source, (x, y, row, n) = draw(program())
    size = draw(st.sampled_from([None, None, 97, 300]))
    if size is not None:  # the same values repeated: NumPy's semantics do not depend on the size
        x, y, row = (np.resize(a, size) for a in (x, y, row))
    if draw(st.booleans()):
        source = source.replace(") -> np.ndarray:\n", "):\n").replace(
            "    return z\n", "    return z, np.sum(z * x), np.max(z)\n"
        )
    return dtype, source, (x, y, row, n)


def _check(dtype, source, args, want, got):
    if not isinstance(want, tuple):
        want, got = (want,), (got,)
    assert isinstance(got, tuple) and len(got) == len(want), source
    z, x = np.asarray(want[0]), args[0]
    assert isinstance(got[0], cuda.DeviceArray), source
    host = got[0].copy_to_host()
    assert close(host, z, dtype), f"{source}\nargs={args}\ngpu={host!r}\nnumpy={z!r}"
    if len(want) == 1:
        return
    assert type(got[1]) is returned_type(want[1]) and type(got[2]) is returned_type(want[2]), source
    total, top = (w.item() for w in want[1:])
    # the maximum of the very elements the GPU computed (math calls may differ from NumPy's in the last bit)
    assert got[2] == host.max().item(), f"{source}\nmax: gpu={got[2]!r} of {host!r}"
    assert close(np.array([got[2]], z.dtype), np.array([top], z.dtype), dtype), f"{source}\nmax vs {top!r}"
    if dtype.startswith("int"):
        assert got[1] == total, source
    else:
        scale = float(np.sum(np.abs(z.astype(np.float64) * x)))
        tol = (1e-5 if dtype == "float32" else 1e-13) * max(scale, 1.0)
        assert abs(got[1] - total) <= tol, f"{source}\nsum: gpu={got[1]!r} numpy={total!r}"


def _run_case(tmp_path_factory, case):
    dtype, source, args = case
    mod = load_module(tmp_path_factory.mktemp(f"gpu{next(_counter)}"), source)
    want = run_captured(mod.f.py_func, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    cuda.use_emulator()
    try:
        for block in BLOCKS:
            cuda.set_block_size(block)
            device = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
            COUNTING.to_host.clear()
            got = run_captured(mod.f, *device)
            assert not isinstance(got[2], cuda.GpuUnsupported), f"{source}\nrefused: {got[2]}"
            if want[2] is not None:
                assert type(got[2]) is type(want[2]), f"{source}\nexpected {want[2]!r}, got {got[2]!r}"
                continue
            assert got[2] is None, f"{source}\nblock {block}: unexpected {got[2]!r}"
            # the two reductions' scalars, 8 bytes each (one copy if one group computes both); else nothing
            scalars = 16 if isinstance(want[0], tuple) else 0
            assert sum(COUNTING.to_host) == scalars, f"{source}\ncopies to the host: {COUNTING.to_host}"
            _check(dtype, source, args, want[0], got[0])
    finally:
        cuda.use_emulator(False)
        cuda.set_block_size(256)


@pytest.fixture(autouse=True)
def counting_device(monkeypatch):
    monkeypatch.setattr(device_module, "_EMULATOR", COUNTING)


_SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(gpu_program())
def test_array_fuzzer_on_the_gpu_matches_numpy(tmp_path_factory, case):
    _run_case(tmp_path_factory, case)


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(gpu_program())
def test_array_fuzzer_on_the_gpu_matches_numpy_slow(tmp_path_factory, case):
    _run_case(tmp_path_factory, case)
