"""How IR values are laid out as machine values ("leaves"), without LLVM: shared by the lowering (``common.py``)
and by the Python side of compiled code (``native.py``, the entry points), which must not load llvmlite when the
machine code comes from the on-disk cache."""

from __future__ import annotations

from ....ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, NumpyScalarType, TensorType, TupleType, Type


# -- leaves ------------------------------------------------------------------------------------------------


class _Pointer(Type):
    """The leaf type of a pointer: an array's meminfo and data, a str's PyObject."""

    def __str__(self):
        return "ptr"


PTR = _Pointer()


def leaves(t: Type) -> list[Type]:
    """The scalar leaves a value of type ``t`` is made of, in order; TypeError if not lowerable.

    An array of rank R is ``(meminfo, data, shape_0..shape_R-1, stride_0..stride_R-1)``: a meminfo pointer
    (null for memory borrowed from the caller), a data pointer, and shape and byte strides as i64, as NumPy
    keeps them. A str is one pointer to a Python str object."""
    if isinstance(t, TensorType):  # (the commonest first: a lowering asks ~4,000 times)
        if t.known:
            return [PTR, PTR] + [INT] * (2 * t.rank)
        raise TypeError(str(t))
    if isinstance(t, TupleType):
        return [x for e in t.elems for x in leaves(e)]
    if t == INT or t == FLOAT or t == BOOL:
        return [t]
    if isinstance(t, NumpyScalarType):  # held as the Python scalar holding its value (an i64, a double)
        return [t.decayed]
    if t == NONE:
        return []
    if t == STR:
        return [PTR]
    if isinstance(t, ListType) and t.elem is not None and (t.elem.is_scalar or is_lowerable(t.elem)):
        return [PTR]  # lists.py: a pointer to the list object
    raise TypeError(str(t))


def is_lowerable(t: Type) -> bool:
    try:
        leaves(t)
        return True
    except TypeError:
        return False


def holds_ref(t: Type) -> bool:
    """Whether values of type ``t`` hold references (arrays, strs, lists) that native code counts."""
    if isinstance(t, (TensorType, ListType)) or t == STR:
        return True
    return isinstance(t, TupleType) and any(holds_ref(e) for e in t.elems)


def ref_parts(t: Type, vals: list):
    """(type, leaves) of each counted part of a value: its arrays and strs, tuples looked into."""
    if isinstance(t, TupleType):
        for e in t.elems:
            n = len(leaves(e))
            yield from ref_parts(e, vals[:n])
            vals = vals[n:]
    elif isinstance(t, (TensorType, ListType)) or t == STR:
        yield t, vals


def elem_size(elem: Type) -> int:
    """Bytes per element of a native list of ``elem`` (``lowering/lists.py``): an array's leaves, a bool's byte,
    or 8."""
    return 8 * len(leaves(elem)) if isinstance(elem, TensorType) else (1 if elem == BOOL else 8)
