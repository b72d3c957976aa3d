"""What the frontend's expressions evaluate to besides IR values (compile-time Python objects), the names of
the control flags it keeps as variables, and how a type is described in messages."""

from __future__ import annotations

from ..ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, NumpyScalarType, TensorType, Type

# the control flags: set when a return, break or continue has run (RETV: the returned value)
RET, RETV, BRK, CONT = "$ret", "$retv", "$brk", "$cont"
FLAGS = (RET, BRK, CONT)
MISSING = object()


class Static:
    """A compile-time Python object met in an expression: a module, a function, a dtype, a constant."""

    def __init__(self, obj, path: str | None = None):
        self.obj = obj
        self.path = path  # the global name or dotted path it was read as (np.exp), if it was


def describe(t: Type) -> str:
    if isinstance(t, TensorType):
        return f"an array ({t})"
    if t == STR:
        return "a str"
    if isinstance(t, ListType):
        return f"a list ({t})"
    if isinstance(t, NumpyScalarType):
        return f"a NumPy {t.dtype} scalar"
    return {INT: "an int", FLOAT: "a float", BOOL: "a bool", NONE: "None"}.get(t, str(t))
