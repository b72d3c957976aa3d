"""Shared vocabulary of the LLVM lowering: LLVM types of IR types (a value is a list of scalar leaves),
constants, and the operator -> handler table that ``handles`` fills."""
from __future__ import annotations

from llvmlite import ir

from ...ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, TensorType, TupleType, Type

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64 = ir.DoubleType()

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
TWO63 = 9223372036854775808.0


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def f64(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def i1(v: bool) -> ir.Constant:
    return ir.Constant(I1, int(bool(v)))


def i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


# -- types -----------------------------------------------------------------------------------------------

class _Pointer(Type):
    """The leaf type of a pointer: an array's meminfo and data, a str's PyObject."""

    def __str__(self):
        return "ptr"


PTR = _Pointer()
I8P = I8.as_pointer()


def leaves(t: Type) -> list[Type]:
    """The scalar leaves a value of type ``t`` is made of, in order; TypeError if not lowerable.

    An array of rank R is ``(meminfo, data, shape_0..shape_R-1, stride_0..stride_R-1)``: a meminfo pointer
    (null for memory borrowed from the caller), a data pointer, and shape and byte strides as i64, as NumPy
    keeps them. A str is one pointer to a Python str object."""
    if t == INT or t == FLOAT or t == BOOL:
        return [t]
    if t == NONE:
        return []
    if t == STR:
        return [PTR]
    if isinstance(t, TupleType):
        return [x for e in t.elems for x in leaves(e)]
    if isinstance(t, TensorType) and t.known:
        return [PTR, PTR] + [INT] * (2 * t.rank)
    if isinstance(t, ListType) and t.elem is not None and (t.elem.is_scalar or is_lowerable(t.elem)):
        return [PTR]   # lists.py: a pointer to the list object
    raise TypeError(str(t))


def is_lowerable(t: Type) -> bool:
    try:
        leaves(t)
        return True
    except TypeError:
        return False


def reg_type(t: Type) -> ir.Type:
    return I8P if t is PTR else {INT: I64, FLOAT: F64, BOOL: I1}[t]


def mem_type(t: Type) -> ir.Type:
    return I8P if t is PTR else {INT: I64, FLOAT: F64, BOOL: I8}[t]


def out_struct(t: Type) -> ir.LiteralStructType:
    return ir.LiteralStructType([mem_type(x) for x in leaves(t)])


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


# Operators this backend lowers (anything else is a LoweringError), filled by the decorators below: the
# method lowering each on scalars, and on arrays (used when an input or the output is an array).
_HANDLERS: dict[str, str] = {}
_ARRAY_HANDLERS: dict[str, str] = {}


def handles(*kinds):
    def deco(fn):
        for k in kinds:
            _HANDLERS[k] = fn.__name__
        return fn
    return deco


def handles_array(*kinds):
    def deco(fn):
        for k in kinds:
            _ARRAY_HANDLERS[k] = fn.__name__
        return fn
    return deco


def handler_for(node) -> str | None:
    """The lowering method for this node: the array one when an array is involved."""
    if node.kind in _ARRAY_HANDLERS and any(isinstance(v.type, TensorType)
                                            for v in list(node.inputs) + list(node.outputs)):
        return _ARRAY_HANDLERS[node.kind]
    return _HANDLERS.get(node.kind)


ARITH = ("add", "sub", "mul", "div", "floordiv", "remainder", "pow")
COMPARE = {"eq": ("==", "oeq"), "ne": ("!=", "une"), "lt": ("<", "olt"), "le": ("<=", "ole"),
           "gt": (">", "ogt"), "ge": (">=", "oge")}
BITWISE = ("__and__", "__or__", "__xor__")
# math functions called in libm, with math_1's can_overflow flag (an infinite result from a finite argument is
# OverflowError("math range error") when set, else ValueError("math domain error"))
MATH1 = {"exp": True, "expm1": True, "sinh": True, "cosh": True, "log": False, "log2": False, "log10": False,
         "log1p": False, "sin": False, "cos": False, "tan": False, "asin": False, "acos": False, "atan": False,
         "tanh": False}
UNSUPPORTED_DETAIL: dict[str, str] = {}




# -- this process's objects, by name -----------------------------------------------------------------------

def process_global(module: ir.Module, name: str, address: int, ty: ir.Type = I8) -> ir.GlobalVariable:
    """An external global named ``name`` standing for the object at ``address`` in this process (a counter, a
    kept str, a buffer): the JIT resolves the name (``llvm.add_symbol``), so machine code refers to process
    objects by name, never by address, and stays valid when the on-disk cache loads it into another process
    (where lowering the graph again binds the names to that process's objects)."""
    import llvmlite.binding as llvm
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    llvm.add_symbol(name, address)
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "external"
    return g


def process_function(module: ir.Module, name: str, address: int, fnty: ir.FunctionType) -> ir.Function:
    """An external function named ``name`` bound to machine code at ``address`` (see ``process_global``)."""
    import llvmlite.binding as llvm
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    llvm.add_symbol(name, address)
    return ir.Function(module, fnty, name)
