"""Structural and bookkeeping operators: constants, tuples, printing, formatting, ranges, unbound locals.
``prim::Loop``, ``prim::If`` and ``prim::CallFunction`` carry blocks or graphs; the verifier and the
interpreter know their structure, the registry only their effects."""

from __future__ import annotations

import sys

import numpy as np

from ..ir.registry import Batch, Effect, OpTypeError, register, type_of
from ..ir.types import BOOL, INT, NAMED_TUPLES, STR, ListType, NamedTupleType, TensorType, TupleType


class _Unbound:
    """The value of a local that has not been assigned yet."""

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()

# Batching (``OpDef.batch``): constants, tuples, print, messages, unbound checks and control flow are handled by
# the vmap transform itself (scriptc/transforms/vmap.py, vmap_rules.py).
register(
    "prim::Constant(*, Any value) -> Any",
    impl=lambda *, value=None: value,
    batch=Batch.TRANSFORM,
    infer=lambda *, value=None: type_of(value),
    shape=lambda types, consts, *, value=None: [value.shape if isinstance(value, np.ndarray) else None],
)
register("prim::Uninitialized() -> Any", impl=lambda: UNBOUND, infer=None, batch=Batch.TRANSFORM)


def _assert_bound(defined, *, name):
    if not defined:
        raise UnboundLocalError(f"cannot access local variable '{name}' where it is not associated with a value")


register(
    "prim::AssertBound(bool defined, *, str name) -> ()",
    impl=_assert_bound,
    infer=lambda t, *, name: [],
    effect=Effect.RAISES,
    batch=Batch.TRANSFORM,
)


def _print(*values, sep=" ", end="\n"):
    print(*values, sep=sep, end=end, file=sys.stdout)


def _print_rule(*types, sep=" ", end="\n"):
    for t in types:
        if (
            isinstance(t, (TensorType, ListType))
            or t.is_scalar
            or t == STR
            or isinstance(t, TupleType)
            or str(t) == "NoneType"
        ):
            continue
        raise OpTypeError(f"cannot print {t}")
    return []


register(
    "prim::Print(Any... values, *, str sep, str end) -> ()",
    impl=_print,
    infer=_print_rule,
    effect=Effect.IO,
    py=(print,),
    batch=Batch.TRANSFORM,
    numpy_scalars=True,
)  # printed as NumPy prints them


def _format(*values, fmt):
    return fmt.format(*values)


register(
    "aten::format(Any... values, *, str fmt) -> str",
    impl=_format,
    infer=lambda *t, fmt: STR,
    effect=Effect.RAISES,
    batch=Batch.TRANSFORM,
    numpy_scalars=True,
)


def _tuple_construct(*xs, named=None):
    """A tuple, or with ``named`` (a NamedTuple class's ``module.qualname``) an instance of that class."""
    return tuple(xs) if named is None else NAMED_TUPLES[named](*xs)


def _tuple_construct_rule(*ts, named=None):
    if named is None:
        return TupleType(tuple(ts))
    cls = NAMED_TUPLES.get(named)
    fields = tuple(cls._fields) if cls is not None else ()
    if len(fields) != len(ts):
        raise OpTypeError(f"{named} has {len(fields)} fields, {len(ts)} given")
    return NamedTupleType(tuple(ts), named, fields)


register(
    "prim::TupleConstruct(Any... elems, *, str? named) -> Tuple",
    impl=_tuple_construct,
    infer=_tuple_construct_rule,
    batch=Batch.TRANSFORM,
    numpy_scalars=True,
)


def _unpack_rule(t):
    if not isinstance(t, TupleType):
        raise OpTypeError(f"cannot unpack {t}")
    return list(t.elems)


register("prim::TupleUnpack(Tuple self) -> ...", impl=lambda t: tuple(t), infer=_unpack_rule, batch=Batch.TRANSFORM)


def _tuple_index_rule(t, *, index):
    if not isinstance(t, TupleType):
        raise OpTypeError(f"cannot index {t} with a constant")
    if not -len(t.elems) <= index < len(t.elems):
        raise OpTypeError(f"tuple index {index} out of range for a {len(t.elems)}-tuple")
    return t.elems[index]


# An element of a tuple not bound yet is not bound either (native code reads whatever the slot holds; no
# program can observe it: reading the tuple itself is what raises UnboundLocalError).
register(
    "prim::TupleIndex(Tuple self, *, int index) -> Any",
    impl=lambda t, *, index: UNBOUND if t is UNBOUND else t[index],
    infer=_tuple_index_rule,
    batch=Batch.TRANSFORM,
)


def _exact_range_length(lo, hi, step):
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    if step > 0:
        return max(0, (hi - lo + step - 1) // step)
    return max(0, (lo - hi - step - 1) // -step)


def _range_length(lo, hi, step):
    """A for loop's trip count over range(lo, hi, step): its length, at most 2**63 - 1 (more steps than any
    loop runs: a loop that returns or breaks gives CPython's result)."""
    return min(_exact_range_length(lo, hi, step), 2**63 - 1)


def _range_last(lo, hi, step):
    """The last element of range(lo, hi, step), ``lo`` when it is empty (where reversed() starts): an int64
    whatever the range's length, which may not be (range(-2**63, 2**63 - 1) has 2**64 - 1 elements)."""
    n = _exact_range_length(lo, hi, step)
    return lo + (n - 1) * step if n > 0 else lo


def _ints_rule(*ts):
    for t in ts:
        if t not in (INT, BOOL):
            raise OpTypeError(f"'{t}' object cannot be interpreted as an integer")
    return INT


def _derive_index_batch(b, node, ins):
    i, start, step = ins
    return [b.op("aten::add", start, b.op("aten::mul", i, step))]


register(
    "aten::__range_length(int lo, int hi, int step) -> int",
    impl=_range_length,
    infer=_ints_rule,
    effect=Effect.RAISES,
    batch=Batch.LANES,
)
register(
    "aten::__range_last(int lo, int hi, int step) -> int",
    impl=_range_last,
    infer=_ints_rule,
    effect=Effect.RAISES,
    batch=Batch.LANES,
)
register(
    "aten::__derive_index(int index, int start, int step) -> int",
    impl=lambda i, start, step: start + i * step,
    infer=_ints_rule,
    batch=Batch.custom(_derive_index_batch),
)

# Control flow and calls: structure checked by the verifier, executed by the interpreter.
register(
    "prim::Loop(int max_trip_count, bool condition, Any... carried) -> ...",
    effect=Effect.IO,
    structural=True,
    batch=Batch.TRANSFORM,
)
register("prim::If(bool condition) -> ...", effect=Effect.IO, structural=True, batch=Batch.TRANSFORM)
# Batched: the callee per example (what remains after inlining: recursive functions).
# A NumPy scalar argument reaches the callee as it is (numpy_scalars): the callee is compiled for it, as
# CPython would pass the np.int32 object (the frontend decaying it made the call's types differ from the callee's).
register(
    "prim::CallFunction(Any... args, *, Graph fn) -> Any",
    effect=Effect.IO,
    structural=True,
    batch=Batch.LANES,
    numpy_scalars=True,
    infer=lambda *types, fn: [v.type for v in fn.outputs],
)
