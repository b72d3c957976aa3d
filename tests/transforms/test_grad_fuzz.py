"""scriptc.grad of random scalar programs (``fuzzgen``: loops, branches, while loops, early returns, int and
float arithmetic, math functions): the sum of a program's float results is differentiated with respect to its
float parameters, by native code and by the interpreter, and compared with central differences of CPython
running the same source, where the program is smooth at the drawn point: the point and its neighbours run the
same lines, the one-sided slopes agree, and two step sizes agree.

Second derivatives (``grad(grad(loss))``, through the first derivative's own tapes) are compared with central
differences of the first derivative, where the program is smooth around the point.

SCRIPTC_GRAD_FUZZ_EXAMPLES and SCRIPTC_GRAD_FUZZ_SECOND_EXAMPLES set the bounded CI counts (first and second
derivatives); ``pytest -m slow`` runs many more."""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

import scriptc
from tests import fuzzgen

CI_EXAMPLES = int(os.environ.get("SCRIPTC_GRAD_FUZZ_EXAMPLES", "15"))
CI_SECOND = int(os.environ.get("SCRIPTC_GRAD_FUZZ_SECOND_EXAMPLES", "5"))  # ~10 s each: grad(grad) compiles
SLOW_EXAMPLES = int(os.environ.get("SCRIPTC_GRAD_FUZZ_SLOW_EXAMPLES", "400"))
_counter = itertools.count()


def _module(source: str, directory):
    name = f"scriptc_gradfuzz_{os.getpid()}_{next(_counter)}"
    path = os.path.join(str(directory), name + ".py")
    with open(path, "w") as f:
        f.write(fuzzgen.MODULE_HEADER + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _with_loss(prog) -> str | None:
    """The program plus ``loss``: the sum of its float results, with the same parameters."""
    floats = [k for k, t in enumerate(prog.ret_types) if t == "float"]
    if not floats or not any(t == "float" for _, t in prog.params):
        return None
    sig = ", ".join(f"{n}: {t}" for n, t in prog.params)
    names = ", ".join(n for n, _ in prog.params)
    total = " + ".join(f"r[{k}]" for k in floats)
    return prog.source + f"\n\ndef loss({sig}) -> float:\n    r = fn({names})\n    return {total}\n"


def _at(f, args, k, dx):
    """f at args with args[k] moved by dx, and the lines CPython ran in f's file on the way."""
    moved = list(args)
    moved[k] += dx
    path, filename = [], f.__code__.co_filename

    def trace(frame, event, _arg):
        if frame.f_code.co_filename != filename:
            return None
        if event == "line":
            path.append(frame.f_lineno)
        return trace

    sys.settrace(trace)
    try:
        return f(*moved), path
    finally:
        sys.settrace(None)


def check(case, tmp_path_factory, native: bool):
    prog, args = case
    source = _with_loss(prog)
    assume(source is not None and fuzzgen.in_range(prog, args))
    directory = tmp_path_factory.mktemp("gradfuzz")
    plain = _module(source, directory)
    try:
        value, path = _at(plain.loss, args, 0, 0)
    except Exception:  # noqa: BLE001 - the program raises at this point: nothing to differentiate
        assume(False)
    assume(math.isfinite(value) and abs(value) < 1e12)
    scripted = _module(source, directory)
    scripted.fn = scriptc.script(scripted.fn)
    loss = scriptc.script(scripted.loss)
    argnums = tuple(k for k, (_, t) in enumerate(prog.params) if t == "float")
    # first where the program is smooth: the gradient is checked there only (at sqrt(|y|) with y == 0 it is inf,
    # which no central difference approaches)
    expected = [_central_difference(plain.loss, args, k, value, path) for k in argnums]
    g = scriptc.grad(loss, argnums=argnums)
    interpreted = g.interpret(*args)
    if native:
        compiled = g(*args)
        assert all(a == b or math.isnan(a) and math.isnan(b) for a, b in zip(compiled, interpreted, strict=True)), (
            "native and interpreted gradients differ",
            compiled,
            interpreted,
        )
    for k, got, (fine, noise) in zip(argnums, interpreted, expected):
        if not math.isfinite(got):
            # through a point where an elementary function's derivative is infinite (sqrt(|x|) of an x that
            # x - x % 100.0 made 0) the chain rule gives inf or 0 * inf = nan even where the whole is smooth, as
            # in jax and torch: not compared with the central difference
            continue
        assert abs(got - fine) <= 1e-6 * max(1.0, abs(fine)) + noise, (source, args, k, got, fine)


def _central_difference(loss, args, k: int, value: float, path) -> tuple[float, float]:
    """(the central difference of ``loss`` in argument k, its rounding noise), where the program is smooth."""
    h = 1e-6 * max(1.0, abs(args[k]))
    (up, up_path), (down, down_path) = _at(loss, args, k, h), _at(loss, args, k, -h)
    # the derivative is that of the path taken: at x == 0 in `if x == 0: return x` it is 1, however smooth
    # the function is around it, so the point and both neighbours must take the same path
    assume(up_path == path == down_path)
    fine = (up - down) / (2 * h)
    noise = 8 * 2.0**-52 * max(1.0, abs(value)) / h
    # smooth here: the one-sided slopes agree (|x| at 0 has a central difference, but no derivative)
    assume(abs((up - value) / h - (value - down) / h) <= 1e-4 * max(1.0, abs(fine)) + 10 * noise)
    # and rounding is not amplified: a step 16 times smaller gives the same slope (in `big % small` an ulp
    # of the divisor moves the result by the quotient's ulps, far beyond the noise estimated from `value`)
    (up2, _), (down2, _) = _at(loss, args, k, h / 16), _at(loss, args, k, -h / 16)
    assume(abs((up2 - down2) / (h / 8) - fine) <= 1e-4 * max(1.0, abs(fine)) + 160 * noise)
    return fine, noise


_SETTINGS = dict(
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def check_second(case, tmp_path_factory):
    """grad(grad(loss)) in the first float parameter against central differences of grad(loss)."""
    prog, args = case
    source = _with_loss(prog)
    assume(source is not None and fuzzgen.in_range(prog, args))
    directory = tmp_path_factory.mktemp("gradfuzz2")
    plain = _module(source, directory)
    k = next(k for k, (_, t) in enumerate(prog.params) if t == "float")
    try:
        value, path = _at(plain.loss, args, k, 0)
    except Exception:  # noqa: BLE001 - the program raises at this point: nothing to differentiate
        assume(False)
    assume(math.isfinite(value) and abs(value) < 1e8)
    scripted = _module(source, directory)
    scripted.fn = scriptc.script(scripted.fn)
    loss = scriptc.script(scripted.loss)
    first = scriptc.grad(loss, argnums=k)
    second = scriptc.grad(first, argnums=k)
    h = 1e-4 * max(1.0, abs(args[k]))
    for step in (h, -h, h / 16, -h / 16):  # the same path everywhere the difference looks
        assume(_at(plain.loss, args, k, step)[1] == path)
    at = [list(args) for _ in range(4)]
    for moved, step in zip(at, (h, -h, h / 16, -h / 16)):
        moved[k] += step
    slopes = [first(*moved) for moved in at]
    g = first(*args)
    assume(all(math.isfinite(v) and abs(v) < 1e8 for v in slopes + [g]))
    fine = (slopes[0] - slopes[1]) / (2 * h)
    finer = (slopes[2] - slopes[3]) / (h / 8)
    noise = 64 * 2.0**-52 * max(1.0, abs(g), *map(abs, slopes)) / h
    assume(abs(fine - finer) <= 1e-3 * max(1.0, abs(fine)) + 20 * noise)  # smooth enough to tell
    # and the first derivative has no kink here (x / (|x| + 1) at 0): the one-sided slopes agree
    assume(abs((slopes[0] - g) / h - (g - slopes[1]) / h) <= 1e-3 * max(1.0, abs(fine)) + 20 * noise)
    got = second(*args)
    assume(math.isfinite(got))
    assert abs(got - fine) <= 1e-3 * max(1.0, abs(fine)) + 20 * noise, (source, args, k, got, fine)
    assert second.interpret(*args) == pytest.approx(got, rel=1e-12, abs=1e-12)


@settings(max_examples=CI_SECOND, **_SETTINGS)
@given(case=fuzzgen.cases(prints=False))
def test_second_derivatives_of_random_programs(case, tmp_path_factory):
    check_second(case, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(case=fuzzgen.cases(prints=False))
def test_second_derivatives_of_random_programs_slow(case, tmp_path_factory):
    check_second(case, tmp_path_factory)


@settings(max_examples=CI_EXAMPLES, **_SETTINGS)
@given(case=fuzzgen.cases(prints=False))
def test_gradients_of_random_programs(case, tmp_path_factory):
    check(case, tmp_path_factory, native=True)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(case=fuzzgen.cases(prints=False))
def test_gradients_of_random_programs_slow(case, tmp_path_factory):
    check(case, tmp_path_factory, native=False)
