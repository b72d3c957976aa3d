"""NumPy's pairwise summation, bit for bit, as LLVM IR: the loop ``np.sum`` and ``np.mean`` of float arrays run
(sum_reductions.py says how NumPy's reduction machinery calls it).

The algorithm is NumPy's ``pairwise_sum`` (``numpy/_core/src/umath/loops_utils.h.src``, NumPy 2.x; the method is
Higham's, "The accuracy of floating point summation", SIAM J. Sci. Comput. 14(4), 1993), for n elements:

- fewer than 8: one accumulator, starting at -0.0, adding the elements in order;
- 8 to ``PW_BLOCKSIZE`` (128): 8 partial sums, started with elements 0..7 and each adding every 8th element up to
  the last multiple of 8; then ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``; then the remaining (< 8)
  elements added in order;
- more: split at ``n2 = n // 2`` rounded down to a multiple of 8, sum both parts so, add the two sums.

The 8 partial sums are one 8-lane vector (the same additions in the same order, so the same bits, at one vector
add per 8 elements), and the recursion is an explicit stack inside the function, so that the code computing a
fused group's elements is inlined in the leaves. Partial sums have the type of NumPy's loop: double for float64,
float for float32 and float16 (NumPy's ``HALF_add`` sums halves as floats).
"""

from __future__ import annotations

import threading

from llvmlite import ir

from .array_value import ELEM, kind_of
from ..runtime import optimizer, runtimes, symbols
from .common import F64, I1, I8P, I64, i64
from ..runtime.engine import engine
from ..runtime.objload import link
from ..runtime.folding import FoldingBuilder
from ..runtime.text_builder import TextBuilder

PW_BLOCKSIZE = 128
UNROLL = 8
BUFFER_SIZE = 8192  # NumPy's default iterator buffer, in elements
STACK_DEPTH = 64  # the recursion halves n: 64 levels hold any i64 length
F32 = ir.FloatType()
HALF = ir.HalfType()
ELEM_SIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "uint32": 4,
    "bool": 1,
}


def summation_dtype(name: str, src_dtype: str) -> str:
    """The dtype NumPy adds in: the array's own float dtype; float32 for a float16 mean; float64 for the mean
    of integers and bools."""
    if kind_of(src_dtype) == "f":
        return "float32" if name == "mean" and src_dtype == "float16" else src_dtype
    return "float64"


def accumulator_type(dtype: str) -> ir.Type:
    """The register type of NumPy's partial sums for a sum in ``dtype``."""
    return F64 if dtype == "float64" else F32


def pairwise_reducible(name: str, src_dtype: str) -> bool:
    """Whether this reduction is summed here: float sums and means, and means of any array."""
    return name == "mean" or (name == "sum" and kind_of(src_dtype) == "f")


class Source:
    """Where the elements of one pairwise sum come from: ``scalar(pos)`` gives element ``pos`` (an i64) as the
    accumulator type, ``vector(pos)`` elements pos..pos+7 as an 8-lane vector; ``begin(start, count)`` runs
    before each leaf block reads its elements (a fused group computes them there); ``block(start, count)``, when
    given, is the sum of a leaf block (the same value as the inline loops, by another route)."""

    def __init__(self, scalar, vector, begin=None, block=None):
        self.scalar, self.vector, self.begin, self.block = scalar, vector, begin, block


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


# -- the pairwise algorithm ---------------------------------------------------------------------------
def pairwise_sum(ctx, n, fty, source: Source):
    """NumPy's pairwise sum of elements 0..n-1 of ``source`` (n >= 0), as a ``fty`` value."""
    return pairwise_sums(ctx, n, [fty], [source], source.begin)[0]


def pairwise_sums(ctx, n, ftys: list, sources: list, begin=None) -> list:
    """NumPy's pairwise sums of elements 0..n-1 of each source, in one walk over the tree: every sum has
    the same tree (it depends only on n), so each leaf block runs ``begin(start, count)`` once (a fused
    group computes the elements of all its sums there) and then sums every source's block."""
    b = ctx.b
    fn = b.function
    starts = ctx.alloca(ir.ArrayType(I64, STACK_DEPTH))
    lengths = ctx.alloca(ir.ArrayType(I64, STACK_DEPTH))
    lefts = [ctx.alloca(ir.ArrayType(fty, STACK_DEPTH)) for fty in ftys]
    took_left = ctx.alloca(ir.ArrayType(I1, STACK_DEPTH))
    top = ctx.alloca(I64)

    def slot(array, k):
        return b.gep(array, [i64(0), k])

    def push(k, start, length):
        b.store(start, slot(starts, k))
        b.store(length, slot(lengths, k))
        b.store(ir.Constant(I1, 0), slot(took_left, k))
        b.store(k, top)

    def left_length(length):
        half = b.lshr(length, i64(1))
        return b.sub(half, b.and_(half, i64(UNROLL - 1)))

    push(i64(0), i64(0), n)
    visit, split, leaf, deliver, up, as_left, as_right, done = (
        fn.append_basic_block(name)
        for name in ("pw.visit", "pw.split", "pw.leaf", "pw.deliver", "pw.up", "pw.left", "pw.right", "pw.done")
    )
    b.branch(visit)

    b.position_at_end(visit)
    k = b.load(top)
    start, length = b.load(slot(starts, k)), b.load(slot(lengths, k))
    b.cbranch(b.icmp_signed("<=", length, i64(PW_BLOCKSIZE)), leaf, split)

    b.position_at_end(split)
    push(b.add(k, i64(1)), start, left_length(length))
    b.branch(visit)

    b.position_at_end(leaf)
    if begin is not None:
        begin(start, length)
    leaf_values = [pairwise_block(ctx, start, length, fty, source) for fty, source in zip(ftys, sources)]
    leaf_end = b.block
    b.branch(deliver)

    # a finished subtree's sums go to its parent: kept as the left half, or added to it as the right half
    b.position_at_end(deliver)
    values = []
    for fty, leaf_value in zip(ftys, leaf_values):
        value = b.phi(fty)
        value.add_incoming(leaf_value, leaf_end)
        values.append(value)
    k = b.load(top)
    b.cbranch(b.icmp_signed("==", k, i64(0)), done, up)

    b.position_at_end(up)
    parent = b.sub(k, i64(1))
    b.store(parent, top)
    b.cbranch(b.load(slot(took_left, parent)), as_right, as_left)

    b.position_at_end(as_left)
    for left, value in zip(lefts, values):
        b.store(value, slot(left, parent))
    b.store(ir.Constant(I1, 1), slot(took_left, parent))
    length = b.load(slot(lengths, parent))
    n2 = left_length(length)
    right = b.add(parent, i64(1))
    b.store(b.add(b.load(slot(starts, parent)), n2), slot(starts, right))
    b.store(b.sub(length, n2), slot(lengths, right))
    b.store(ir.Constant(I1, 0), slot(took_left, right))
    b.store(right, top)
    b.branch(visit)

    b.position_at_end(as_right)
    sums = [b.fadd(b.load(slot(left, parent)), value) for left, value in zip(lefts, values)]
    for value, total in zip(values, sums):
        value.add_incoming(total, as_right)
    b.branch(deliver)

    b.position_at_end(done)
    return values


def pairwise_block(ctx, start, length, fty, source: Source):
    """The sum of ``length`` <= 128 elements from ``start``: a plain loop below 8, else 8 partial sums
    (the caller has run the source's ``begin``)."""
    b = ctx.b
    if source.block is not None:
        return source.block(start, length)
    result = ctx.alloca(fty)
    with b.if_else(b.icmp_signed("<", length, i64(UNROLL))) as (short, block):
        with short:
            # -0.0 so that a sum of only -0.0 stays -0.0, as NumPy starts
            b.store(add_in_order(ctx, ir.Constant(fty, -0.0), start, i64(0), length, source), result)
        with block:
            end = b.sub(length, b.and_(length, i64(UNROLL - 1)))
            partial = vector_loop(ctx, source.vector(start), start, end, source)
            lane = [b.extract_element(partial, ir.Constant(ir.IntType(32), j)) for j in range(UNROLL)]
            pairs = [b.fadd(lane[j], lane[j + 1]) for j in range(0, UNROLL, 2)]
            total = b.fadd(b.fadd(pairs[0], pairs[1]), b.fadd(pairs[2], pairs[3]))
            b.store(add_in_order(ctx, total, start, end, length, source), result)
    return b.load(result)


def vector_loop(ctx, first, start, end, source: Source):
    """``first`` plus the 8-lane vectors at start+8, start+16, ... below start+end, lane by lane."""
    b = ctx.b
    fn = b.function
    pre = b.block
    header, body, exit_ = (fn.append_basic_block(f"pw.vec.{x}") for x in ("head", "body", "exit"))
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64)
    acc = b.phi(first.type)
    i.add_incoming(i64(UNROLL), pre)
    acc.add_incoming(first, pre)
    b.cbranch(b.icmp_signed("<", i, end), body, exit_)
    b.position_at_end(body)
    acc.add_incoming(b.fadd(acc, source.vector(b.add(start, i))), b.block)
    i.add_incoming(b.add(i, i64(UNROLL)), b.block)
    b.branch(header)
    b.position_at_end(exit_)
    return acc


def add_in_order(ctx, acc, start, lo, hi, source: Source):
    """``acc`` plus elements start+lo .. start+hi-1, one at a time."""
    b = ctx.b
    fn = b.function
    pre = b.block
    header, body, exit_ = (fn.append_basic_block(f"pw.seq.{x}") for x in ("head", "body", "exit"))
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64)
    total = b.phi(acc.type)
    i.add_incoming(lo, pre)
    total.add_incoming(acc, pre)
    b.cbranch(b.icmp_signed("<", i, hi), body, exit_)
    b.position_at_end(body)
    total.add_incoming(b.fadd(total, source.scalar(b.add(start, i))), b.block)
    i.add_incoming(b.add(i, i64(1)), b.block)
    b.branch(header)
    b.position_at_end(exit_)
    return total


def chunked_sum(ctx, total, n, fty, sum_dtype: str, chunk: int | None, sum_of):
    """``total`` plus the sums of ``n`` elements, one inner-loop call per ``chunk`` elements (all at once
    when None), rounded to ``sum_dtype`` after each call as NumPy stores its result.
    ``sum_of(offset, count)`` is the pairwise sum of ``count`` elements from ``offset``."""
    return chunked_sums(ctx, [total], n, [fty], [sum_dtype], chunk, lambda offset, count: [sum_of(offset, count)])[0]


def chunked_sums(ctx, totals: list, n, ftys: list, sum_dtypes: list, chunk: int | None, sums_of) -> list:
    """``chunked_sum`` of several sums sharing their chunks: ``sums_of(offset, count)`` gives a list."""
    b = ctx.b
    if chunk is None:
        return [
            round_sum(ctx, b.fadd(total, s), dtype) for total, s, dtype in zip(totals, sums_of(i64(0), n), sum_dtypes)
        ]
    accs = [ctx.alloca(fty) for fty in ftys]
    for acc, total in zip(accs, totals):
        b.store(total, acc)
    count = b.sdiv(b.add(n, i64(chunk - 1)), i64(chunk))
    with ctx.for_range(count) as c:
        offset = b.mul(c, i64(chunk))
        rest = b.sub(n, offset)
        size = b.select(b.icmp_signed("<", rest, i64(chunk)), rest, i64(chunk))
        for acc, s, dtype in zip(accs, sums_of(offset, size), sum_dtypes):
            b.store(round_sum(ctx, b.fadd(b.load(acc), s), dtype), acc)
    return [b.load(acc) for acc in accs]


def round_sum(ctx, x, sum_dtype: str):
    """A float16 sum is stored as half after each step (its partial sums are floats)."""
    if sum_dtype != "float16":
        return x
    return ctx.b.fpext(ctx.b.fptrunc(x, HALF), F32)


# -- elements of arrays -------------------------------------------------------------------------------
def convert_to(ctx, x, src_dtype: str, fty):
    """An element (scalar or 8-lane vector) of ``src_dtype`` as NumPy casts it to the accumulator type."""
    b = ctx.b
    vector = isinstance(x.type, ir.VectorType)
    target = ir.VectorType(fty, x.type.count) if vector else fty
    if src_dtype == "float16" and isinstance(x.type.element if vector else x.type, ir.IntType):
        x = b.bitcast(x, ir.VectorType(HALF, x.type.count) if vector else HALF)  # stored as its bits
    k = kind_of(src_dtype)
    if k == "f":
        if x.type == target:
            return x
        return b.fpext(x, target) if src_dtype == "float16" or fty == F64 else b.fptrunc(x, target)
    if k == "b":
        zero = ir.Constant(x.type, None)
        return b.uitofp(b.icmp_unsigned("!=", x, zero), target)
    return b.uitofp(x, target) if k == "u" else b.sitofp(x, target)


def run_source(ctx, base, stride, src_dtype: str, fty, contiguous: bool) -> callable:
    """``source_at(offset)`` for the elements of a run at ``base`` (i8*) ``stride`` bytes apart; vectors are
    one load when ``contiguous`` (stride == itemsize), else eight."""
    b = ctx.b
    elem = ELEM[src_dtype]
    itemsize = i64(ELEM_SIZE[src_dtype])

    def source_at(offset):
        def ptr(pos, ty):
            pos = b.add(offset, pos)
            step = itemsize if contiguous else stride
            return b.bitcast(b.gep(base, [b.mul(pos, step)]), ty.as_pointer())

        def scalar(pos):
            return convert_to(ctx, b.load(ptr(pos, elem)), src_dtype, fty)

        def vector(pos):
            vty = ir.VectorType(elem, UNROLL)
            if contiguous:
                x = b.load(ptr(pos, vty), align=itemsize.constant)
            else:
                x = ir.Constant(vty, ir.Undefined)
                for j in range(UNROLL):
                    x = b.insert_element(x, b.load(ptr(b.add(pos, i64(j)), elem)), ir.Constant(ir.IntType(32), j))
            return convert_to(ctx, x, src_dtype, fty)

        return Source(scalar, vector)

    return source_at


def run_sum(ctx, total, base, stride, n, src_dtype: str, sum_dtype: str, chunk):
    """``total`` plus the sum of one run of an array (``n`` elements ``stride`` bytes apart from ``base``),
    in NumPy's inner-loop calls (the loop is compiled once per process: ``pairwise_run``)."""
    b = ctx.b
    fty = accumulator_type(sum_dtype)
    fnty = ir.FunctionType(fty, [I8P, I64, I64])

    def build(lowering, fn):
        base, stride, n = fn.args
        pairwise_run_body(lowering, base, stride, n, src_dtype, fty)

    callee = call_compiled_once(ctx, ("pairwise", src_dtype, str(fty)), fnty, build)

    def sum_of(offset, count):
        return b.call(callee, [b.gep(base, [b.mul(offset, stride)]), stride, count])

    return chunked_sum(ctx, total, n, fty, sum_dtype, chunk, sum_of)


def pairwise_run_body(ctx, base, stride, n, src_dtype: str, fty) -> None:
    """Return the pairwise sum of a run: vector loads when it is contiguous, element loads otherwise."""
    b = ctx.b
    with b.if_else(b.icmp_signed("==", stride, i64(ELEM_SIZE[src_dtype])), likely=True) as (contiguous, strided):
        with contiguous:
            b.ret(pairwise_sum(ctx, n, fty, run_source(ctx, base, stride, src_dtype, fty, True)(i64(0))))
        with strided:
            b.ret(pairwise_sum(ctx, n, fty, run_source(ctx, base, stride, src_dtype, fty, False)(i64(0))))
    b.unreachable()


def call_compiled_once(ctx, key: tuple, fnty: ir.FunctionType, build):
    """A callee for the function ``build(lowering, fn)`` emits, compiled (strict FP, O3) once per process
    and key: the code every reduction site shares is not optimized again for each compiled function."""
    name = "scriptc.shared." + "_".join(str(k) for k in key).replace(" ", "")
    if ctx.mod.target.standalone:  # a library for another process: the function goes into this module
        fn = ctx.mod.module.globals.get(name)
        if fn is None:
            fn = build_function(ctx.mod, name, fnty, build)
            fn.linkage = "internal"
        return fn
    compiled_once(key, fnty, build, name)  # bound to the name (which later links resolve)
    return ctx.mod.module.globals.get(name) or ir.Function(ctx.mod.module, fnty, name)


_COMPILED: dict = {}
_COMPILED_LOCK = threading.RLock()  # a shared function may call another one


def compiled_once(key: tuple, fnty: ir.FunctionType, build, name: str) -> int:
    """The address of ``build``'s function for this key, bound to ``name`` (what native code calls), compiled on
    first use unless code from the on-disk cache brought it already (``runtimes.py``). With tiered compilation,
    first-tier code, which O3's replaces once the optimizer process sends it (for code linked from then on:
    the signature whose first call compiled it links its own O3 code after, as its module was queued after)."""
    with _COMPILED_LOCK:
        address = _COMPILED.get(key) or symbols.bound(name)
        if address is None:
            address = _compile(key, fnty, build, name)
            symbols.bind(name, address)
        _COMPILED[key] = address
        return address


def _compile(key: tuple, fnty: ir.FunctionType, build, name: str) -> int:
    from .lower import ModuleLowering  # (cycle: lower imports fused_multi, which imports this module)

    prefix = "scriptc_shared_" + "_".join(str(k) for k in key).replace(" ", "")
    mod = ModuleLowering(prefix)
    fn = build_function(mod, mod.unique("fn"), fnty, build)
    eng = engine()
    text = SHARED_IR[name] = str(mod.module)
    if optimizer.enabled():  # the first tier's code now (a third of O3's compile time), O3's later
        quick = f"{fn.name}.quick"  # (both objects live in the process: distinct symbols for the JIT)
        obj = eng.quick_object(text.replace(f'@"{fn.name}"', f'@"{quick}"'))
        address = link(obj, [quick])[quick]
        runtimes.register(obj, {name: quick}, first_tier=True)
        optimizer.submit(text, lambda obj, error: _install_optimized(key, name, fn.name, obj, error))
        return address
    llmod = eng.optimize(text)
    obj = eng.emit_object(llmod)
    address = link(obj, [fn.name], llmod)[fn.name]
    runtimes.register(obj, {name: fn.name})
    return address


def _install_optimized(key: tuple, name: str, symbol: str, obj: bytes | None, error: str | None) -> None:
    """Bind a function compiled once to its O3 code (on the optimizer's thread); without it (the process
    exiting, or LLVM's error, which is reported as a signature's is), the first tier's code stays."""
    if obj is None:
        if error is not None:
            import warnings

            warnings.warn(
                f"scriptc: optimizing {name} failed, its first-tier code stays: {error}", RuntimeWarning, stacklevel=1
            )
        return

    address = link(obj, [symbol])[symbol]
    with _COMPILED_LOCK:
        _COMPILED[key] = address
        symbols.bind(name, address)
        runtimes.register(obj, {name: symbol})


SHARED_IR: dict[str, str] = {}  # name -> LLVM IR of the functions compiled once in this process (to read)


class KernelRaises(Exception):
    """The code of a function compiled once (``build_function``) would raise: it has no way to (no unwind
    block, no status to return), so the caller lowers that code inline instead."""


def build_function(mod, name: str, fnty: ir.FunctionType, build) -> ir.Function:
    """A function of ``mod`` whose body ``build(lowering, fn)`` emits."""
    from .lower import FunctionLowering  # (cycle: lower imports fused_multi, which imports this module)

    fn = ir.Function(mod.module, fnty, name)
    fn.attributes.add("nounwind")
    # a lowering object for a function with no graph: the emitting helpers need a builder and an entry block
    lowering = FunctionLowering.into(mod, fn, None, nogil=False)
    lowering.compiled_once = True
    body = fn.append_basic_block("body")
    TextBuilder(lowering.entry_block).branch(body)
    lowering.b = FoldingBuilder(body)
    build(lowering, fn)
    return fn


def fty_size(fty) -> int:
    return 8 if fty == F64 else 4
