"""Lowering of the builtins declared in ``ops/builtins.py`` (round, divmod, math predicates, gcd, factorial,
``raise``) and the call-depth guard of calls between compiled functions.

- ``round(x)`` is ``llvm.rint`` (round half to even in the default rounding mode), then CPython's
  ``PyLong_FromDouble`` errors; ``round(i, n)`` of an int with n < 0 rounds half to even in 128-bit arithmetic
  (CPython's ``_PyLong_DivmodNear``), wrapped to 64 bits as every int result is.
- ``round(x, n)`` of a float is CPython's own ``float.__round__``, called back through ctypes: CPython rounds
  the exact binary value with David Gay's correctly rounded dtoa, which no short native formula reproduces.
- Recursion: every call of a compiled function counts a per-module depth; past the recursion limit in force
  when the code was compiled (``sys.getrecursionlimit()``) it raises RecursionError as CPython does, instead of
  overflowing the C stack. The counter is not per thread (see the README on nogil). CPython 3.11's frames are
  not on the C stack, so a limit raised for deep recursion (``sys.setrecursionlimit(10**6)``) let native frames
  overflow it (a segfault at depth 200,000): every ``STACK_CHECK_EVERY`` levels the frame's address is also
  checked against this thread's floor, set at its first check to that address less ``stack_budget()`` and kept
  in its payload buffer (``errors.STACK_FLOOR_SLOT``).
"""

from __future__ import annotations

import math
import sys
import threading

from llvmlite import ir

from ....ir.types import FLOAT
from ....ops.builtins import FACTORIAL_MAX, exception_class
from .common import F64, I1, I8P, I32, I64, f64, i1, i32, i64
from .rules import lowers
from ..runtime.callbacks import ROUND_SYMBOL
from ..runtime.errors import STACK_FLOOR_SLOT
from ..runtime.text_builder import TextBuilder
from . import scalar_ops, strings

DEPTH_GLOBAL = "scriptc.call_depth"
RECURSION_MESSAGE = "maximum recursion depth exceeded"
STACK_CHECK_EVERY = 64  # levels of calls between two checks of the C stack's room (a power of 2)
STACK_MARGIN = 1 << 20  # bytes kept free above the stack's end (at most a quarter of it): STACK_CHECK_EVERY
#                             frames, and the error's way out
PTHREAD_ATTR_BYTES = 64  # sizeof(pthread_attr_t) is 56 on x86-64 and aarch64 glibc


def build_stack_floor_function(mod) -> ir.Function:
    """``i64 stack_floor(i64 here)``: this thread's lowest safe stack address, found on its first call and kept
    in its payload buffer: the stack's end (``pthread_getattr_np``) plus ``STACK_MARGIN`` or a quarter of its
    size; where that fails, ``here - mod.stack_budget``."""
    fn = ir.Function(mod.module, ir.FunctionType(I64, [I64]), mod.unique("stack_floor"))
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    (here,) = fn.args
    b = TextBuilder(fn.append_basic_block("entry"))
    slot = b.gep(b.call(mod.helper("payload"), []), [i64(STACK_FLOOR_SLOT)])
    known = b.load(slot)
    with b.if_then(b.icmp_unsigned("!=", known, i64(0))):
        b.ret(known)

    def libc(name, ret, args):
        return mod._decls.get(name) or mod._decls.setdefault(
            name, ir.Function(mod.module, ir.FunctionType(ret, args), name)
        )

    attr = b.bitcast(b.alloca(ir.ArrayType(I64, PTHREAD_ATTR_BYTES // 8)), I8P)
    start, size = b.alloca(I8P), b.alloca(I64)
    b.store(ir.Constant(I8P, None), start)
    b.store(i64(0), size)
    got = b.call(libc("pthread_getattr_np", I32, [I64, I8P]), [b.call(libc("pthread_self", I64, []), []), attr])
    floor = b.sub(here, i64(mod.stack_budget))
    with b.if_then(b.icmp_signed("==", got, i32(0))):
        b.call(libc("pthread_attr_getstack", I32, [I8P, I8P.as_pointer(), I64.as_pointer()]), [attr, start, size])
        b.call(libc("pthread_attr_destroy", I32, [I8P]), [attr])
    quarter = b.lshr(b.load(size), i64(2))  # (a small thread's stack keeps a quarter of it)
    margin = b.select(b.icmp_unsigned("<", quarter, i64(STACK_MARGIN)), quarter, i64(STACK_MARGIN))
    bottom = b.add(b.ptrtoint(b.load(start), I64), margin)
    floor = b.select(b.and_(b.icmp_signed("==", got, i32(0)), b.icmp_unsigned("<", bottom, here)), bottom, floor)
    b.store(floor, slot)
    b.ret(floor)
    return fn


def stack_budget() -> int:
    """Bytes of C stack compiled calls may take on a thread: its stack's size (``threading.stack_size()``, else
    the stack limit, else glibc's 8 MB), less 1 MB for what the thread used before and between two checks."""
    size = threading.stack_size()
    if not size:
        import resource  # (here: not on every process's import path)

        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
        size = soft if 0 < soft != resource.RLIM_INFINITY else 8 << 20
    return max(size - (1 << 20), 256 << 10)


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


# -- module-level helpers ---------------------------------------------------------------------------
def module_global(ctx, name: str, ty, init):
    gv = ctx.mod.module.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(ctx.mod.module, ty, name)
        gv.linkage = "internal"
        gv.initializer = init
    return gv


def table_lookup(ctx, name: str, ty, values: list, index):
    arr = ir.ArrayType(ty, len(values))
    gv = module_global(ctx, name, arr, ir.Constant(arr, [ir.Constant(ty, v) for v in values]))
    gv.global_constant = True
    return ctx.b.load(ctx.b.gep(gv, [i64(0), index], inbounds=True))


# -- calls ------------------------------------------------------------------------------------------
def call_counting_depth(ctx, fn, args):
    """Call a compiled function one level deeper; RecursionError past the recursion limit."""
    b = ctx.b
    depth = module_global(ctx, DEPTH_GLOBAL, I64, i64(0))
    deeper = b.add(b.load(depth), i64(1))
    ctx.raise_if(b.icmp_signed(">", deeper, i64(sys.getrecursionlimit())), RecursionError, RECURSION_MESSAGE)
    if ctx.mod.stack_budget is not None:
        checks = b.icmp_unsigned("==", b.and_(deeper, i64(STACK_CHECK_EVERY - 1)), i64(0))
        with b.if_then(checks, likely=False):
            frame = ctx.mod._decls.get("frameaddress") or ctx.mod._decls.setdefault(
                "frameaddress", ir.Function(ctx.mod.module, ir.FunctionType(I8P, [I32]), "llvm.frameaddress.p0i8")
            )
            here = b.ptrtoint(b.call(frame, [i32(0)]), I64)  # this frame's address
            floor = b.call(ctx.mod.helper("stack_floor"), [here])
            ctx.raise_if(b.icmp_unsigned("<", here, floor), RecursionError, RECURSION_MESSAGE)
    b.store(deeper, depth)
    status = b.call(fn, args)
    b.store(b.sub(deeper, i64(1)), depth)
    return status


def round_int(ctx, x, n):
    """round(x, n) of an int: x for n >= 0, else the nearest multiple of 10**-n, ties to even, wrapped to
    64 bits. 10**k fits in an i64 up to k = 18 (no 128-bit division: the JIT links no compiler-rt); at
    k = 19 the result is 0 or +-10**19 (wrapped), beyond it always 0 (|x| < 5 * 10**19)."""
    b = ctx.b
    k = b.sub(i64(0), n)
    small = b.and_(b.icmp_signed(">", k, i64(0)), b.icmp_signed("<=", k, i64(18)))
    q = table_lookup(ctx, "scriptc.pow10", I64, [10**j for j in range(19)], b.select(small, k, i64(0)))
    r = scalar_ops.int_mod(ctx, x, q)
    base = b.sub(x, r)
    twice = b.shl(r, i64(1))
    odd = b.trunc(scalar_ops.int_floordiv(ctx, base, q), I1)
    up = b.or_(b.icmp_signed(">", twice, q), b.and_(b.icmp_signed("==", twice, q), odd))
    rounded = b.add(base, b.select(up, q, i64(0)))
    wrap19 = (10**19 + 2**63) % 2**64 - 2**63
    at19 = b.select(
        b.icmp_signed(">", x, i64(5 * 10**18)),
        i64(wrap19),
        b.select(b.icmp_signed("<", x, i64(-5 * 10**18)), i64(-wrap19), i64(0)),
    )
    big = b.select(b.icmp_signed("==", k, i64(19)), at19, i64(0))
    return b.select(b.icmp_signed(">=", n, i64(0)), x, b.select(small, rounded, big))


def gcd_helper(ctx) -> ir.Function:
    """i64 gcd(i64, i64): Euclid on the magnitudes as unsigned (gcd(INT64_MIN, 0) is 2**63, which wraps)."""
    name = f"{ctx.mod.prefix}.gcd"
    fn = ctx.mod.module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(ctx.mod.module, ir.FunctionType(I64, [I64, I64]), name)
    fn.linkage = "internal"
    entry, loop, body, done = (fn.append_basic_block(n) for n in ("entry", "loop", "body", "done"))
    b = TextBuilder(entry)
    mags = [b.select(b.icmp_signed("<", v, i64(0)), b.sub(i64(0), v), v) for v in fn.args]
    b.branch(loop)
    b.position_at_end(loop)
    x, y = b.phi(I64, "x"), b.phi(I64, "y")
    b.cbranch(b.icmp_unsigned("==", y, i64(0)), done, body)
    b.position_at_end(body)
    r = b.urem(x, y)
    b.branch(loop)
    x.add_incoming(mags[0], entry), x.add_incoming(y, body)
    y.add_incoming(mags[1], entry), y.add_incoming(r, body)
    b.position_at_end(done)
    b.ret(x)
    return fn


# -- lowering rules ----------------------------------------------------------------------------------------------------


# -- raise ------------------------------------------------------------------------------------------
@lowers("prim::RaiseException")
def lower_raise(ctx, node):
    exc = exception_class(node.attrs["exc"])
    if all(v.node is not None and v.node.kind == "prim::Constant" for v in node.inputs):
        ctx.raise_if(i1(True), exc, *[v.node.attrs.get("value") for v in node.inputs])
    else:  # a message known at run time: the exception is made in Python from the values
        strings.call_back(ctx, strings.plan_id("raise", [v.type for v in node.inputs], fmt=exc.__name__), node.inputs)
    return []


# -- round ------------------------------------------------------------------------------------------
@lowers("prim::round")
def lower_round(ctx, node):
    x, t = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if t != FLOAT:
        return [[scalar_ops.to_i64(ctx, x, t)]]
    scalar_ops.check_float_to_int(ctx, x)
    return [[scalar_ops.float_to_int_wrapping(ctx, ctx.b.call(ctx.mod.intrinsic("rint"), [x]))]]


@lowers("prim::round_ndigits")
def lower_round_ndigits(ctx, node):
    (x, n), (t, tn) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    n = scalar_ops.to_i64(ctx, n, tn)
    if t != FLOAT:
        return [[round_int(ctx, scalar_ops.to_i64(ctx, x, t), n)]]
    b = ctx.b
    out = ctx.alloca(F64)
    fn = strings.extern(ctx, ROUND_SYMBOL, ir.FunctionType(I32, [F64, I64, F64.as_pointer()]))
    status = b.call(fn, [x, n, out])
    ctx.raise_if(b.icmp_signed("!=", status, i32(0)), OverflowError, "rounded value too large to represent")
    return [[b.load(out)]]


# -- divmod -----------------------------------------------------------------------------------------
@lowers("prim::divmod")
def lower_divmod(ctx, node):
    (a, c), (ta, tc) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    b = ctx.b
    if FLOAT not in (ta, tc):
        ia, ic = scalar_ops.to_i64(ctx, a, ta), scalar_ops.to_i64(ctx, c, tc)
        ctx.raise_if(b.icmp_signed("==", ic, i64(0)), ZeroDivisionError, "integer division or modulo by zero")
        return [[scalar_ops.int_floordiv(ctx, ia, ic), scalar_ops.int_mod(ctx, ia, ic)]]
    fa, fc = scalar_ops.to_f64(ctx, a, ta), scalar_ops.to_f64(ctx, c, tc)
    ctx.raise_if(b.fcmp_ordered("==", fc, f64(0.0)), ZeroDivisionError, "float divmod()")
    return [[scalar_ops.float_floordiv(ctx, fa, fc), scalar_ops.float_mod(ctx, fa, fc)]]


# -- math -------------------------------------------------------------------------------------------
@lowers("prim::isclose")
def lower_isclose(ctx, node):
    """math_isclose_impl (Modules/mathmodule.c)."""
    a, c, rel, tol = [scalar_ops.to_f64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    b = ctx.b
    negative = b.or_(b.fcmp_ordered("<", rel, f64(0.0)), b.fcmp_ordered("<", tol, f64(0.0)))
    ctx.raise_if(negative, ValueError, "tolerances must be non-negative")
    diff = scalar_ops.fabs(ctx, b.fsub(c, a))
    close = b.or_(
        b.or_(
            b.fcmp_ordered("<=", diff, scalar_ops.fabs(ctx, b.fmul(rel, c))),
            b.fcmp_ordered("<=", diff, scalar_ops.fabs(ctx, b.fmul(rel, a))),
        ),
        b.fcmp_ordered("<=", diff, tol),
    )
    close = b.and_(close, b.not_(b.or_(scalar_ops.isinf(ctx, a), scalar_ops.isinf(ctx, c))))
    return [[b.or_(b.fcmp_ordered("==", a, c), close)]]


@lowers("prim::gcd")
def lower_gcd(ctx, node):
    a, c = [scalar_ops.to_i64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    return [[ctx.b.call(gcd_helper(ctx), [a, c])]]


@lowers("prim::factorial")
def lower_factorial(ctx, node):
    n = scalar_ops.to_i64(ctx, ctx.scalar(node.inputs[0]), node.inputs[0].type)
    b = ctx.b
    ctx.raise_if(b.icmp_signed("<", n, i64(0)), ValueError, "factorial() not defined for negative values")
    ctx.raise_with(
        b.icmp_signed(">", n, i64(FACTORIAL_MAX)),
        OverflowError,
        "factorial() of {0} does not fit in a 64-bit int (scriptc ints are 64-bit: n must be at "
        f"most {FACTORIAL_MAX})",
        [n],
    )
    return [[table_lookup(ctx, "scriptc.factorials", I64, [math.factorial(k) for k in range(FACTORIAL_MAX + 1)], n)]]
