"""Test helpers: FileCheck on IR text, running a scripted function against CPython."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tempfile

import numpy as np

from scriptc.ir.types import NARROW_SCALARS


def filecheck(text: str, checks: str) -> None:
    """Match ``text`` against FileCheck directives (CHECK:, CHECK-NEXT:, CHECK-NOT: ...), as LLVM tests do."""
    with tempfile.NamedTemporaryFile("w", suffix=".checks", delete=False) as f:
        f.write(checks)
    r = subprocess.run([sys.executable, "-m", "filecheck", f.name], input=text, capture_output=True, text=True)
    assert r.returncode == 0, f"FileCheck failed:\n{r.stderr}\n--- input ---\n{text}"


def run_captured(fn, *args):
    """(result, stdout text, exception) of calling ``fn``."""
    out = io.StringIO()
    result, exc = None, None
    with contextlib.redirect_stdout(out):
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            exc = e
    return result, out.getvalue(), exc


def same_value(a, b, rtol=0.0) -> bool:
    """Equal values of the same type. A NumPy scalar of a narrow dtype (int32, float32 ...) must come back as
    one of the same dtype; one of float64, int64 or bool counts as the Python scalar scriptc returns
    (docs/language.md: NumPy scalars)."""
    if isinstance(a, np.generic) and a.dtype.name in NARROW_SCALARS:
        return type(a) is type(b) and (a == b or a != a and b != b)
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same_value(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        return np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True) if rtol else np.array_equal(a, b, equal_nan=True)
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    if rtol and isinstance(a, float):
        return abs(a - b) <= rtol * max(abs(a), abs(b))
    return a == b


def assert_matches_python(fn, *args, rtol=0.0, runner=None):
    """Run ``fn`` compiled and its Python original on copies of ``args``: same result, output, mutations."""
    import copy

    a1, a2 = copy.deepcopy(args), copy.deepcopy(args)
    expected = run_captured(fn.py_func, *a1)
    actual = run_captured(runner or fn, *a2)
    if expected[2] is not None:
        assert type(actual[2]) is type(expected[2]), f"expected {expected[2]!r}, got {actual[2]!r}"
    else:
        assert actual[2] is None, f"unexpected {actual[2]!r}"
        assert same_value(expected[0], actual[0], rtol), f"result {actual[0]!r} != python {expected[0]!r}"
    assert actual[1] == expected[1], f"printed {actual[1]!r}, python printed {expected[1]!r}"
    for x, y in zip(a1, a2):
        if isinstance(x, np.ndarray):
            assert same_value(x, y, rtol), "arguments were mutated differently"


def assert_same_array(got, want) -> None:
    """Same dtype, shape and values; floats bit for bit (signed zeros, NaN payloads and all)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind == "f":
        bits = {8: np.uint64, 4: np.uint32, 2: np.uint16}[got.dtype.itemsize]
        assert np.array_equal(got.view(bits), want.view(bits)), (got, want)
    else:
        assert np.array_equal(got, want), (got, want)


def run_threads_interleaved(threads, interval: float = 1e-6) -> None:
    """Start and join ``threads`` with CPython switching between threads as often as ``interval`` allows (races
    show up at once)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)


def returned_type(value) -> type:
    """The type scriptc returns for CPython's ``value``: a NumPy scalar of a narrow dtype as it is, one of
    float64, int64 or bool as the Python scalar (docs/language.md: NumPy scalars)."""
    if isinstance(value, np.generic) and value.dtype.name not in NARROW_SCALARS:
        return type(value.item())
    return type(value)
