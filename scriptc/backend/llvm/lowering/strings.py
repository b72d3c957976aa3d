"""Strings and printing in native code: str constants, str reference counts, ``prim::Print`` and
``aten::format``.

A str is one pointer leaf, a ``PyObject*`` to a Python str. Constants point at objects kept alive for the life
of the process (``keep_str``); every str value native code holds owns one reference (ownership.py), taken and
dropped with the C API's ``Py_IncRef``/``Py_DecRef``.

Printing and formatting call back into Python, so that the text is CPython's exactly (float repr, NumPy's
array formatting, every format spec) and goes through ``sys.stdout``. At compile time each print or format
node registers a *plan* (the IR types of its values and ``sep``/``end`` or ``fmt``); at run time native code
stores the values' leaves in a stack record (an LLVM struct of their memory types) and calls

    i32 scriptc.py.callback(i64 plan_id, i8* record)

a ``ctypes`` callback that decodes the record into Python values (arrays as NumPy views of native memory, no
copy) and prints or formats them. ``aten::format``'s record ends with an out slot where the callback writes a
new reference to the result. A callback that raises stores the exception (per thread) and returns nonzero;
native code then returns the node's ``PendingException`` error code, and the Python side, raising
``ERROR_TABLE[code].make()``, re-raises that very exception object.

Threads and the GIL. The callback is a ctypes callback: it takes the GIL itself, so printing works whether or
not the caller holds it. Reference counts must be changed with the GIL held: by default (``nogil`` false) native
code calls ``Py_IncRef``/``Py_DecRef`` directly, which is right when the native entry point is called with the
GIL held; a lowering with ``nogil`` true routes them through ``scriptc.str.incref.gil`` /
``scriptc.str.decref.gil`` (internal functions wrapping the call in ``PyGILState_Ensure``/``Release``).
``FunctionLowering.py_refcount`` is the one place that chooses.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import BOOL
from ..runtime.callbacks import CALLBACK_SYMBOL, PY_SYMBOLS, PendingException, keep_str, str_symbol
from ..runtime.callbacks import _CONSTANTS, _PLANS, Plan, plan_id, take_str  # noqa: F401  (re-exported)
from .common import I8, I8P, I32, I64, i32, i64, leaves, mem_type, process_global
from .rules import lowers
from ..runtime.text_builder import TextBuilder

VOID = ir.VoidType()


# -- lowering ------------------------------------------------------------------------------------------------


# -- str constants and reference counts, printing and formatting (functions of ``ctx``, a FunctionLowering)


def extern(ctx, name: str, fnty: ir.FunctionType) -> ir.Function:
    """The module's declaration of an external function (bound with ``llvm.add_symbol``)."""
    fn = ctx.mod.module.globals.get(name)
    if fn is None:
        fn = ir.Function(ctx.mod.module, fnty, name)
        fn.attributes.add("nounwind")
    return fn


def py_refcount(ctx, which: str) -> ir.Function:
    """``void (i8*)`` changing a PyObject's reference count (``which``: incref or decref), null-safe. The one
    place that decides how: directly (GIL held) or wrapped in PyGILState_Ensure/Release (``nogil``)."""
    direct = extern(ctx, PY_SYMBOLS[which][0], ir.FunctionType(VOID, [I8P]))
    if not ctx.nogil:
        return direct
    name = f"scriptc.str.{which}.gil"
    fn = ctx.mod.module.globals.get(name)
    if fn is None:
        ensure = extern(ctx, PY_SYMBOLS["gil_ensure"][0], ir.FunctionType(I32, []))
        release = extern(ctx, PY_SYMBOLS["gil_release"][0], ir.FunctionType(VOID, [I32]))
        fn = ir.Function(ctx.mod.module, ir.FunctionType(VOID, [I8P]), name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        b = TextBuilder(fn.append_basic_block("entry"))
        state = b.call(ensure, [])
        b.call(direct, [fn.args[0]])
        b.call(release, [state])
        b.ret_void()
    return fn


# -- strs ----------------------------------------------------------------------------------------------
def str_constant(ctx, value: str) -> list:
    """The leaves of a str constant: its object's address. The value owns a reference, like every value
    a node produces (ownership.py), so the constant takes one each time it is evaluated."""
    vals = [process_global(ctx.mod.module, str_symbol(value), keep_str(value), I8)]
    str_retain(ctx, vals)
    return vals


def str_retain(ctx, vals: list) -> None:
    ctx.b.call(py_refcount(ctx, "incref"), [vals[0]])


def str_release(ctx, vals: list) -> None:
    ctx.b.call(py_refcount(ctx, "decref"), [vals[0]])


# -- callbacks ---------------------------------------------------------------------------------------------
def call_back(ctx, pid: int, values, out: bool = False):
    """Store the values' leaves in a stack record, call the Python callback with plan ``pid``, return the
    node's error code if it raised; the record's out slot (an i8*) when ``out``."""
    b = ctx.b
    types = [t for v in values for t in leaves(v.type)]
    vals = [x for v in values for x in ctx.get(v)]
    rec_t = ir.LiteralStructType([mem_type(t) for t in types] + ([I8P] if out else []))
    rec = ctx.alloca(rec_t)
    for k, (x, t) in enumerate(zip(vals, types)):
        if t == BOOL:
            x = b.zext(x, I8)
        b.store(x, b.gep(rec, [i32(0), i32(k)], inbounds=True))
    callback = extern(ctx, CALLBACK_SYMBOL, ir.FunctionType(I32, [I64, I8P]))
    status = b.call(callback, [i64(pid), b.bitcast(rec, I8P)])
    ctx.raise_if(b.icmp_signed("!=", status, i32(0)), PendingException)
    if out:
        return b.load(b.gep(rec, [i32(0), i32(len(types))], inbounds=True))
    return None


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers("prim::Print")
def lower_print(ctx, node):
    pid = plan_id(
        "print", [v.type for v in node.inputs], sep=node.attrs.get("sep", " "), end=node.attrs.get("end", "\n")
    )
    call_back(ctx, pid, node.inputs)
    return []


@lowers("aten::format")
def lower_format(ctx, node):
    pid = plan_id("format", [v.type for v in node.inputs], fmt=node.attrs["fmt"])
    return [[call_back(ctx, pid, node.inputs, out=True)]]
