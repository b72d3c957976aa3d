"""The first tier's kernels generated while the program is lowered (scriptc/backend/llvm/runtime/streaming.py): results,
errors and freed memory as without streaming, the GIL's switch interval restored, nothing left running when the
lowering fails half-way. (The MLP training step streamed, against O3: test_tiers.py.)"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime import codegen_threads, optimizer, streaming
from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count

pytestmark = pytest.mark.skipif(codegen_threads.THREADS == 1, reason="one code generation thread: nothing streams")


def layers(x: np.ndarray, w: np.ndarray, i: int) -> float:
    """Nine layers, each a matrix product and a fusion group (18 outlined nodes), an element read half-way."""
    h = np.tanh(x @ w) + 1.0
    h = np.maximum(h @ w, 0.5) * 2.0
    h = np.sqrt(h @ w + 1.0) - 0.25
    h = np.exp(-(h @ w)) + h
    k = h[i, 0]
    h = np.tanh(h @ w) * 3.0 - k
    h = np.maximum(h @ w, 0.0) + 0.125
    h = np.log1p(h @ w * h)
    h = (h @ w) / (1.0 + h * h)
    h = np.abs(h @ w) - h
    return float(np.sum(h)) + k


RNG = np.random.default_rng(3)
X, W = RNG.random((6, 5)), RNG.random((5, 5)) * 0.3


@pytest.fixture
def streams(monkeypatch):
    """The KernelStreams made while the test runs (tiers on; batches of 300 instructions: several per program)."""
    monkeypatch.setenv("SCRIPTC_TIERS", "1")
    made = []
    real = streaming.KernelStream.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(streaming.KernelStream, "__init__", init)
    monkeypatch.setattr(streaming, "BATCH_LINES", 300)
    return made


def test_streamed_program_returns_and_raises_as_python(streams):
    interval = sys.getswitchinterval()
    f = scriptc.script(layers)
    with optimizer.held():  # the first tier's code only
        for i in (0, 5, -6):
            assert f(X, W, i) == pytest.approx(layers(X, W, i), rel=1e-12)
        allocated, freed = allocation_count(), free_count()
        with pytest.raises(IndexError) as info:
            f(X, W, 6)
        with pytest.raises(IndexError) as expected:
            layers(X, W, 6)
        assert str(info.value) == str(expected.value)
        assert allocation_count() - allocated == free_count() - freed > 0
    assert len(streams) == 1 and len(streams[0].exports) >= 3, "its kernels should have streamed in batches"
    assert sys.getswitchinterval() == interval


def test_lowering_error_after_batches_ends_the_stream(streams, monkeypatch):
    """A lowering that fails half-way (here: made to fail at the 14th outlined node, after batches went out)."""
    from scriptc.backend.llvm.runtime.errors import LoweringError
    from scriptc.backend.llvm.lowering.outline import Outlining

    real, calls = Outlining.lower_outlined, []

    def lower_outlined(self, node):
        calls.append(node)
        if len(calls) == 14:
            raise LoweringError(node.kind, "made to fail (on purpose)", node.source)
        return real(self, node)

    monkeypatch.setattr(Outlining, "lower_outlined", lower_outlined)
    interval = sys.getswitchinterval()
    with pytest.raises(LoweringError, match="on purpose"):
        scriptc.script(layers)(X, W, 1)
    assert len(streams) == 1 and streams[0].exports, "batches should have been shipped before the error"
    assert sys.getswitchinterval() == interval
    assert not [t for t in threading.enumerate() if t.name == "scriptc-codegen"]
    monkeypatch.setattr(Outlining, "lower_outlined", real)
    g = scriptc.script(layers)  # the next compile streams as usual
    assert g(X, W, 2) == pytest.approx(layers(X, W, 2), rel=1e-12)
    assert len(streams) == 2 and streams[1].exports


def test_two_threads_compiling_at_once(streams):
    """Two threads each compile a large program (each may stream): both results right, no thread left behind, the
    switch interval restored once both are done."""
    interval = sys.getswitchinterval()
    results, errors = {}, []

    def run(k):
        try:
            results[k] = scriptc.script(layers)(X, W, k)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: pytest.approx(layers(X, W, k), rel=1e-12) for k in (1, 2)}
    assert len(streams) == 2
    assert sys.getswitchinterval() == interval
    assert not [t for t in threading.enumerate() if t.name == "scriptc-codegen"]
