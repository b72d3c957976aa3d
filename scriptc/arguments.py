"""Python arguments and the kinds scripted functions specialize on: which kind a value passed is, whether a
parameter's annotation accepts it, and the widenings tried when the kind passed does not compile."""

from __future__ import annotations


import numpy as np

from .calling import check_array_kind, unsupported_layout  # noqa: F401  (re-exported)
from .interop import as_array, is_array_like
from .ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, TENSOR, ListType, NamedTupleType, TensorType, TupleType, Type

UNANNOTATED = None  # the "type" of a parameter without annotation: the kind passed at each call


_TOWER = (BOOL, INT, FLOAT)  # the numeric tower: a bool is an int, an int is a float
_SCALAR_OF = {FLOAT: float, INT: int, BOOL: bool}


def _accept(want: Type, got: Type) -> Type | None:
    """The parameter type for a value of type ``got`` passed where ``want`` is annotated (None: rejected).
    Functions specialize on the kind actually passed: an int given for a ``float`` parameter stays an int,
    exactly as it does in Python (the numeric tower: bool < int < float). A bool given for an ``int``
    parameter is the int 0 or 1 (``range(n)``, ``np.zeros(n)`` and indexing need a true int). An unannotated
    parameter takes any kind as it is."""
    if want is UNANNOTATED:
        return got
    if want in _TOWER and got in _TOWER:
        if _TOWER.index(got) > _TOWER.index(want):
            return None
        return INT if (want, got) == (INT, BOOL) else got
    if want == got:
        return want
    if isinstance(want, TensorType) and isinstance(got, TensorType):
        return got
    if isinstance(want, TupleType) and isinstance(got, TupleType):
        return _accept_tuple(want, got)
    if isinstance(want, ListType) and isinstance(got, ListType):
        from .frontend.lists import accept_list  # the frontend: scriptc.load (which checks arguments here) loads none

        return accept_list(want, got)
    return None


def _accept_tuple(want: TupleType, got: TupleType) -> TupleType | None:
    """Element by element; a NamedTuple parameter takes values of its own class only."""
    if (
        len(want.elems) != len(got.elems)
        or type(want) is not type(got)
        or isinstance(want, NamedTupleType)
        and want.qualname != got.qualname
    ):
        return None
    elems = [_accept(w, g) for w, g in zip(want.elems, got.elems)]
    return None if None in elems else got.with_elems(elems)


def _widenings(declared: list[Type], types: tuple) -> list[tuple]:
    """``types``, then every scalar narrower than its annotation raised one step up the tower at a time, until
    all are at their annotations."""
    out, current = [tuple(types)], list(types)
    while True:
        raised = [
            _TOWER[_TOWER.index(t) + 1]
            if t in _TOWER and want in _TOWER and _TOWER.index(t) < _TOWER.index(want)
            else t
            for t, want in zip(current, declared)
        ]
        if raised == current:
            return out
        out.append(tuple(raised))
        current = raised


def _kind(arg) -> Type | None:
    if isinstance(arg, (bool, np.bool_)):
        return BOOL
    if isinstance(arg, (int, np.integer)):
        return INT
    if isinstance(arg, (float, np.floating)):
        return FLOAT
    return None


def _check_argument(fname, pname, want: Type | None, arg, dtype=None):
    if want is UNANNOTATED:
        want = _unannotated_kind(fname, pname, arg)
    if isinstance(want, ListType):
        from .frontend.lists import list_argument  # the frontend: scriptc.load (which checks arguments here) loads none

        return list_argument(fname, pname, want, arg)
    if isinstance(want, TupleType):
        return _tuple_argument(fname, pname, want, arg)
    if isinstance(want, TensorType):
        if not isinstance(arg, np.ndarray):
            view = as_array(fname, pname, arg)  # torch, JAX, DLPack, the array interface: without a copy
            if view is None:
                raise TypeError(f"{fname}() argument '{pname}' must be a numpy.ndarray, not {type(arg).__name__}")
            arg = view
        # unaligned data is read through an aligned twin (realign.py, at the call)
        check_array_kind(fname, pname, arg, layout=arg.dtype.name in DTYPE_NAMES, alignment=False)
        if arg.dtype.name not in DTYPE_NAMES:
            raise TypeError(f"{fname}() argument '{pname}' has unsupported dtype {arg.dtype}")
        if dtype is not None and arg.dtype.name != dtype:  # npt.NDArray[np.float64]
            raise TypeError(f"{fname}() argument '{pname}' must be an array of {dtype}, not {arg.dtype}")
        return TensorType(arg.dtype.name, arg.ndim), arg
    kind = _kind(arg)
    t = _accept(want, kind) if kind is not None else None
    if t is None:
        raise TypeError(f"{fname}() argument '{pname}' must be {want}, not {type(arg).__name__}")
    # NumPy scalars are taken as the Python scalar they convert to (a float32 as its exact float64 value)
    return t, _SCALAR_OF[t](arg)


def _tuple_argument(fname, pname, want: TupleType, arg):
    """A tuple (or NamedTuple) argument: its type with each element's kind, and its converted elements."""
    named = want.cls if isinstance(want, NamedTupleType) else None
    if not isinstance(arg, tuple) or (named is not None and not isinstance(arg, named)) or len(arg) != len(want.elems):
        what = named.__name__ if named is not None else f"a tuple of {len(want.elems)}"
        raise TypeError(f"{fname}() argument '{pname}' must be {what}, not {type(arg).__name__}")
    names = want.fields if isinstance(want, NamedTupleType) else range(len(want.elems))
    checked = [
        _check_argument(fname, f"{pname}.{n}" if named else f"{pname}[{n}]", w, a)
        for n, w, a in zip(names, want.elems, arg)
    ]
    t = want.with_elems(c[0] for c in checked)
    values = [c[1] for c in checked]
    return t, (named(*values) if named is not None else tuple(values))


def _unannotated_kind(fname, pname, arg) -> Type:
    """The parameter type an argument passed for an unannotated parameter asks for."""
    kind = _kind(arg)
    if kind is not None:
        return kind
    if type(arg) is list:
        return ListType(_list_element_kind(fname, pname, arg))
    if isinstance(arg, np.ndarray) or is_array_like(arg):
        return TENSOR
    if isinstance(arg, tuple):
        from .frontend import annotation_type  # the frontend: scriptc.load (which checks arguments here) loads none

        declared = annotation_type(type(arg)) if type(arg) is not tuple else None
        if declared is not None:
            return declared
        return TupleType(tuple(_unannotated_kind(fname, f"{pname}[{k}]", a) for k, a in enumerate(arg)))
    raise TypeError(
        f"{fname}() argument '{pname}' must be int, float, bool, an array, a list or a tuple, not {type(arg).__name__}"
    )


def _list_element_kind(fname, pname, arg: list) -> Type:
    """``list[bool]``, ``list[int]``, ``list[float]`` (ints and floats mixed) or ``list[np.ndarray]``."""
    if not arg:
        raise TypeError(
            f"{fname}() argument '{pname}': an empty list has no element type to compile for; "
            f"annotate the parameter (e.g. list[float])"
        )
    kinds = {_kind(v) if _kind(v) is not None else TENSOR if isinstance(v, np.ndarray) else None for v in arg}
    if kinds == {BOOL}:
        return BOOL
    if kinds in ({INT}, {FLOAT}, {TENSOR}):
        return kinds.pop()
    if kinds == {INT, FLOAT}:  # converting the ints would reflect floats back into the caller's list
        raise TypeError(
            f"{fname}() argument '{pname}' mixes int and float elements: annotate the parameter "
            f"list[float] to take them as floats"
        )
    raise TypeError(f"{fname}() argument '{pname}' must be a list of int, float, bool or arrays of one kind")
