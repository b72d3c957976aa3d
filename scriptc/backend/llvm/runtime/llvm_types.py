"""The LLVM vocabulary of generated code, the lowering's and the runtime's: LLVM types of IR types (a value is
a list of scalar leaves), constants, loop metadata, and the process's objects named in a module."""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import BOOL, FLOAT, INT, Type, decayed
from . import symbols
from .layout import PTR, leaves

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64 = ir.DoubleType()

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TWO63 = 9223372036854775808.0


_INT_CONSTANTS: dict[tuple[int, int], ir.Constant] = {}


def _int_constant(t: ir.IntType, v: int) -> ir.Constant:
    """One constant object per width and value (llvmlite caches a constant's text on the object: a lowering
    asks for ~5,000, mostly the same few)."""
    if type(v) is not int:
        return ir.Constant(t, v)
    c = _INT_CONSTANTS.get((t.width, v))
    if c is None:
        if len(_INT_CONSTANTS) > 4096:
            _INT_CONSTANTS.clear()
        c = _INT_CONSTANTS[t.width, v] = ir.Constant(t, v)
    return c


def i64(v: int) -> ir.Constant:
    return _int_constant(I64, v)


def f64(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def i1(v: bool) -> ir.Constant:
    return ir.Constant(I1, int(bool(v)))


def i32(v: int) -> ir.Constant:
    return _int_constant(I32, v)


# -- types -----------------------------------------------------------------------------------------------

I8P = I8.as_pointer()


def reg_type(t: Type) -> ir.Type:
    return I8P if t is PTR else {INT: I64, FLOAT: F64, BOOL: I1}[decayed(t)]


def mem_type(t: Type) -> ir.Type:
    return I8P if t is PTR else {INT: I64, FLOAT: F64, BOOL: I8}[decayed(t)]


def out_struct(t: Type, module: ir.Module | None = None) -> ir.Type:
    """The struct a function stores its result in. In a module with a context of its own (``ModuleLowering``),
    one of 8 fields or more is a named type, spelled once: a training step's result of 90 fields was written
    out at each of its 376 uses."""
    fields = [mem_type(x) for x in leaves(t)]
    literal = ir.LiteralStructType(fields)
    if module is None or len(fields) < 8 or module.context is ir.global_context:
        return literal
    named = module.context.__dict__.setdefault("scriptc_out_types", {})
    key = str(literal)
    if key not in named:
        named[key] = module.context.get_identified_type(f"out.{len(named)}")
        named[key].set_body(*fields)
    return named[key]


# -- this process's objects, by name -----------------------------------------------------------------------

NO_VECTORIZE = ("llvm.loop.vectorize.enable", False)
NO_UNROLL = "llvm.loop.unroll.disable"


def loop_hints(module: ir.Module, back_edge: ir.Instruction, *hints) -> None:
    """Attach ``llvm.loop`` metadata with ``hints`` (LLVM loop properties: a name such as
    ``llvm.loop.unroll.runtime.disable``, or a (name, bool) pair such as ``NO_VECTORIZE``) to a loop's back-edge
    branch. Each loop gets its own ID node."""

    def prop(h):
        if isinstance(h, str):
            return module.add_metadata([ir.MetaDataString(module, h)])
        name, value = h
        return module.add_metadata([ir.MetaDataString(module, name), ir.Constant(ir.IntType(1), value)])

    loop_id = ir.values.MDValue(module, [], name=str(len(module.metadata)))  # registers itself in the module
    loop_id.operands = (loop_id, *map(prop, hints))
    back_edge.set_metadata("llvm.loop", loop_id)


def process_global(module: ir.Module, name: str, address: int, ty: ir.Type = I8) -> ir.GlobalVariable:
    """An external global named ``name`` standing for the object at ``address`` in this process (a counter, a
    kept str, a buffer): the linker resolves the name (``symbols.bind``), so machine code refers to process
    objects by name, never by address, and stays valid when the on-disk cache loads it into another process
    (where the same names are bound to that process's objects: ``symbols.py``)."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    symbols.bind(name, address)
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "external"
    return g


def process_function(module: ir.Module, name: str, address: int, fnty: ir.FunctionType) -> ir.Function:
    """An external function named ``name`` bound to machine code at ``address`` (see ``process_global``)."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    symbols.bind(name, address)
    return ir.Function(module, fnty, name)
