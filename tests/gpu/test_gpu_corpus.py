"""The differential corpus through the GPU path, in the grid emulator: every corpus function with array
arguments is called with device arrays, at several block sizes (1, 32, 128 and 100, which divides no size), and
must match CPython + NumPy. A function using what does not run on the GPU yet raises GpuUnsupported before any
kernel runs (the test counts those: they may not silently fall back to the host), and a call copies no whole
device array to the host unless it prints one. Floats are compared within
rounding: kernels call glibc's libm (the emulator) or libdevice (a GPU) and single-precision math for float32,
and block reductions add in another order than NumPy's pairwise sums."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import scriptc.cuda as cuda
from scriptc.backend.nvptx import GpuUnsupported
from tests.gpu_support import to_host
from tests.e2e.test_corpus import _run, assert_same, corpus, pure_python

ARRAY_CASES = [c for c in corpus.CASES if any(isinstance(a, np.ndarray) for a in c.args_factory())]
RAN = {"kernels": 0, "refused": 0}


@pytest.fixture
def whole_copies(monkeypatch):
    """A list that records the shape of every device array copied to the host as a whole."""
    copies, real = [], cuda.DeviceArray.copy_to_host

    def counted(self):
        copies.append(self.shape)
        return real(self)

    monkeypatch.setattr(cuda.DeviceArray, "copy_to_host", counted)
    return copies


# cases whose many barrier-synchronised launches take seconds per call at full block sizes in the emulator (one
# host thread per GPU thread on two cores): at 100 and 128 threads a block they run in `make test-slow`
EMULATOR_HEAVY = {"power_iteration"}


def _case_params():
    for c in ARRAY_CASES:
        for block in (1, 32, 128, 100):
            marks = [pytest.mark.slow] if c.id in EMULATOR_HEAVY and block >= 100 else []
            yield pytest.param(c, block, marks=marks, id=f"{c.id}-{block}")


@pytest.mark.parametrize("c, block", _case_params())
def test_corpus_on_device_arrays(emulator, whole_copies, c, block, capfd):
    cuda.set_block_size(block)
    args = c.args_factory()
    a1, a2 = copy.deepcopy(args), copy.deepcopy(args)
    expected, expected_out = _run(pure_python(c.fn), a1, capfd)
    moved = {}  # the same host array twice (aliased arguments) is the same device array twice
    device_args = [moved.setdefault(id(a), cuda.to_device(a)) if isinstance(a, np.ndarray) else a for a in a2]
    try:
        got, out = _run(c.fn, device_args, capfd)
    except GpuUnsupported as e:
        RAN["refused"] += 1
        assert not whole_copies or expected_out, f"device arrays {whole_copies} were copied to the host"
        pytest.skip(f"not on the GPU yet: {e}")
    RAN["kernels"] += 1
    assert out == expected_out, "printed text differs"
    assert not whole_copies or expected_out, f"device arrays {whole_copies} were copied to the host"
    float32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
    rtol = max(c.rtol or 0.0, 2e-6 if float32 else 1e-12)
    assert_same(expected, to_host(got), rtol, max(c.atol, 1e-12))
    for k, (x1, d) in enumerate(zip(a1, device_args)):
        if isinstance(x1, np.ndarray):
            assert_same(x1, d.copy_to_host(), rtol, max(c.atol, 1e-12), f"argument {k} after the call")


def test_the_corpus_runs_kernels():
    """Run last in this file: nearly all of the corpus's array functions run on the device (all of them when
    this was written; a new corpus function using an operator the GPU path lacks is refused, not wrong)."""
    if RAN["kernels"] + RAN["refused"] == 0:
        pytest.skip("run with the corpus cases above")
    assert RAN["kernels"] >= max(40, 0.9 * (RAN["kernels"] + RAN["refused"])), RAN
