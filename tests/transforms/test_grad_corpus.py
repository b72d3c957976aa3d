"""scriptc.grad over the differential corpus: every corpus function that returns a float and takes float (or
float array) arguments is differentiated with respect to all of them. Native code must agree with the reference
interpreter running the gradient graph, and both with central finite differences of CPython running the
function (each evaluation on fresh copies of the arguments: many corpus functions write them)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import scriptc
from scriptc.ir.types import FLOAT, TupleType
from scriptc.transforms.autodiff import differentiable
from tests.e2e.test_corpus import corpus
from tests.transforms.test_grad import central_difference

# Functions that are not smooth at their sample point at the scale of a finite difference; the gradient there is
# the derivative along the path taken (what JAX gives too), which a difference quotient does not see.
NOT_SMOOTH = {
    "bisection": "60 halvings: the result moves with its inputs only below 2**-60, where h does not reach",
    "clean_mean": "a sample element is exactly 0.0, the threshold of math.isclose that drops it",
}


def _float_cases():
    out = []
    for c in corpus.CASES:
        try:
            types, _ = c.fn._bind(c.args_factory(), {})
            g = c.fn.graph_for_types(types, optimize=False)
        except Exception:  # noqa: BLE001 - cases that do not compile are test_corpus's business
            continue
        argnums = tuple(
            k
            for k, p in enumerate(g.inputs)  # (central_difference moves floats and arrays)
            if differentiable(p) and not isinstance(p.type, TupleType)
        )
        if len(g.outputs) == 1 and g.outputs[0].type == FLOAT and argnums:
            out.append(pytest.param(c, argnums, id=c.id))
    return out


CASES = _float_cases()


def test_the_corpus_has_float_functions():
    assert len(CASES) >= 20


# Cases called with one array for two parameters, one of them written in place: grad refuses them (one memory
# would need one adjoint for two parameters); they are differentiated with separate copies instead.
SHARED = {"aliased_args"}


def unshared(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("c, argnums", CASES)
def test_gradient_of_corpus_function(c, argnums):
    g = scriptc.grad(c.fn, argnums=argnums)
    if c.id in SHARED:
        with pytest.raises(ValueError, match="share memory"):
            g(*copy.deepcopy(c.args_factory()))
    native = g(*unshared(c.args_factory()))
    interpreted = g.interpret(*unshared(c.args_factory()))
    for got, oracle in zip(native, interpreted):
        np.testing.assert_allclose(got, oracle, rtol=1e-12, atol=1e-14)
    if c.id in NOT_SMOOTH:
        return
    args = unshared(c.args_factory())

    def fresh(*a):
        return c.fn.py_func(*copy.deepcopy(a))

    for k, got in zip(argnums, native):
        np.testing.assert_allclose(got, central_difference(fresh, list(args), k), rtol=1e-6, atol=1e-7)
