"""Lowering rules: how each operator becomes LLVM IR, registered against its ``OpDef``.

A rule is a function ``rule(ctx, node) -> [registers of each output]``; ``ctx`` is the ``FunctionLowering`` of
the function being built (its builder ``ctx.b``, module ``ctx.mod``, values ``ctx.get``/``ctx.scalar`` and the
shared code-generation helpers). Rules live beside the helpers of their domain (``scalar_ops.py``: numbers,
``arrays.py``: array creation and elements, ``lists.py``, ``strings.py``, ``random_lower.py`` ...) and are found
by operator, never by method name: the lowering core calls ``rule_for(node)(ctx, node)``.

An operator may have two rules: the one for scalars (``@lowers``) and the one used when an input or the output is
an array (``@lowers_array``). An element-wise operator on NumPy scalars takes ``NUMPY_SCALAR_RULE``
(numpy_scalars.py): NumPy's arithmetic in the scalar's own dtype.

The NVPTX target runs the same rules inside its kernels; what differs (math symbols, the loop driver) is its
``Target`` (target.py). ``tests/cpu/test_lowering_rules.py`` fails when a registered operator has no rule and no
stated reason.
"""

from __future__ import annotations

from typing import Callable

from ....ir.registry import lookup
from ....ir.types import NumpyScalarType, TensorType

Rule = Callable[..., list]

# by the name of the operator's OpDef (registering a rule looks the operator up: a misspelt name fails at import)
SCALAR_RULES: dict[str, Rule] = {}
ARRAY_RULES: dict[str, Rule] = {}
_numpy_scalar_rule: Rule | None = None


def _register(table: dict, kinds):
    def deco(fn: Rule) -> Rule:
        for kind in kinds:
            name = lookup(kind).name
            assert name not in table, f"two lowering rules for {kind}"
            table[name] = fn
        return fn

    return deco


def lowers(*kinds: str):
    """Register the decorated function as the lowering rule of ``kinds`` on scalars (and on every value when the
    operator has no array rule)."""
    return _register(SCALAR_RULES, kinds)


def lowers_array(*kinds: str):
    """Register the decorated function as the lowering rule of ``kinds`` when an input or the output is an
    array."""
    return _register(ARRAY_RULES, kinds)


def lowers_numpy_scalars(fn: Rule) -> Rule:
    """Register the decorated function as the rule of every element-wise operator on NumPy scalars."""
    global _numpy_scalar_rule
    _numpy_scalar_rule = fn
    return fn


def rule_for(node) -> Rule | None:
    """The rule lowering ``node``: the array rule when an array is involved, NumPy's scalar arithmetic for an
    element-wise operator one of whose scalars is a NumPy scalar, else the scalar rule (None: no rule)."""
    op = lookup(node.kind)
    values = list(node.inputs) + list(node.outputs)
    if op.name in ARRAY_RULES and any(isinstance(v.type, TensorType) for v in values):
        return ARRAY_RULES[op.name]
    if (
        op.elementwise
        and node.kind != "aten::numpy_scalar"
        and any(isinstance(v.type, NumpyScalarType) for v in values)
    ):
        return _numpy_scalar_rule
    return SCALAR_RULES.get(op.name)
