"""Lists in native code: the list runtime and the lowering of the list operators (ops/lists.py).

A list value is one pointer leaf to a heap object

    struct { i64 refcount; i64 len; i64 cap; elem *data; }

allocated with ``malloc`` (the header) and ``malloc``/``realloc`` (the element buffer, growing by doubling), so
aliases (``ys = xs``, a callee's parameter) see every change. Its reference count is at offset 0 like an array's
meminfo, so ``runtime("retain")`` serves both; the last ``list_release`` releases the elements (arrays: their
meminfos) and frees both blocks. Elements are stored in memory types: i64, double, i8 (bool), or an array's
leaves as a struct (meminfo, data, shape..., strides...); a list holds one reference to each array in it.
Semantics and messages are CPython's (IndexError "list index out of range", "pop from empty list", ...).
"""

from __future__ import annotations

import ctypes

from llvmlite import ir

from ....ir.types import BOOL, FLOAT, INT, NONE, ListType, TensorType
from .array_value import Arr, kind_of
from . import scalar_ops, views
from ..runtime import symbols
from .common import F64, I1, I8, I8P, I32, I64, i32, i64, leaves, mem_type, process_global, reg_type
from .rules import lowers
from ..runtime.layout import elem_size
from ..runtime.text_builder import TextBuilder
from ....ops.lists import MAX_EMPTY, MIN_EMPTY

LEN, CAP, DATA = 1, 2, 3
HEADER_T = ir.LiteralStructType([I64, I64, I64, I8P])
# Lists native code has allocated and freed in this process (a test hook, as arrays.ALLOCATIONS)
LIST_ALLOCATIONS, LIST_FREES = symbols.LIST_ALLOCATIONS, symbols.LIST_FREES
_COUNTER_SYMBOLS = {id(LIST_ALLOCATIONS): "scriptc.list.allocations", id(LIST_FREES): "scriptc.list.frees"}


def list_counts() -> tuple[int, int]:
    return LIST_ALLOCATIONS.value, LIST_FREES.value


MAX_BYTES = 2**63 - 1  # bytes: a list's element buffer is at most this long (its size is an i64)


def elem_mem_type(elem) -> ir.Type:
    if isinstance(elem, TensorType):
        return ir.LiteralStructType([mem_type(t) for t in leaves(elem)])
    return mem_type(elem)


def _key(elem) -> str:
    return str(elem).replace(" ", "").replace("(", "_").replace(")", "").replace(",", "_").replace("*", "x")


# -- the list runtime and operators (functions of ``ctx``, a FunctionLowering)


# -- runtime -------------------------------------------------------------------------------------------
def _list_fn(ctx, name: str, elem, fnty, build):
    decls = ctx.mod._decls
    key = f"scriptc.list.{name}.{_key(elem)}"
    if key not in decls:
        fn = decls[key] = ir.Function(ctx.mod.module, fnty, key)
        fn.linkage = "internal"
        build(fn, TextBuilder(fn.append_basic_block()))
    return decls[key]


def _header(ctx, b, p):
    return b.bitcast(p, HEADER_T.as_pointer())


def _field(ctx, b, p, k):
    return b.gep(_header(ctx, b, p), [i32(0), i32(k)], inbounds=True)


def _data(ctx, b, p, elem):
    return b.bitcast(b.load(_field(ctx, b, p, DATA)), elem_mem_type(elem).as_pointer())


def _count(ctx, b, counter):
    c = process_global(ctx.mod.module, _COUNTER_SYMBOLS[id(counter)], ctypes.addressof(counter), I64)
    b.store(b.add(b.load(c), i64(1)), c)


def list_runtime_new(ctx, elem):
    """i8* new(i64 n): a list of length n (elements uninitialized), one reference; null when out of memory."""

    def build(fn, b):
        malloc = ctx._libc("malloc", I8P, [I64])
        n = fn.args[0]
        cap = b.select(b.icmp_signed("<", n, i64(4)), i64(4), n)
        with b.if_then(b.icmp_signed(">", cap, i64(MAX_BYTES // elem_size(elem)))):
            b.ret(ir.Constant(I8P, None))  # (its size in bytes would wrap: CPython's MemoryError)
        data = b.call(malloc, [b.mul(cap, i64(elem_size(elem)))])
        head = b.call(malloc, [i64(32)])
        ok = b.and_(
            b.icmp_unsigned("!=", data, ir.Constant(I8P, None)), b.icmp_unsigned("!=", head, ir.Constant(I8P, None))
        )
        with b.if_then(b.not_(ok)):
            free = ctx._libc("free", ir.VoidType(), [I8P])
            b.call(free, [data])
            b.call(free, [head])
            b.ret(ir.Constant(I8P, None))
        for k, v in enumerate((i64(1), n, cap, data)):
            b.store(v, _field(ctx, b, head, k))
        _count(ctx, b, LIST_ALLOCATIONS)
        b.ret(head)

    return _list_fn(ctx, "new", elem, ir.FunctionType(I8P, [I64]), build)


def list_runtime_release(ctx, elem):
    def build(fn, b):
        p = fn.args[0]
        with b.if_then(b.icmp_unsigned("!=", p, ir.Constant(I8P, None))):
            rc = _field(ctx, b, p, 0)
            n = b.sub(b.load(rc), i64(1))
            b.store(n, rc)
            with b.if_then(b.icmp_signed("==", n, i64(0))):
                if isinstance(elem, TensorType):
                    data = _data(ctx, b, p, elem)
                    saved, ctx.b = ctx.b, b
                    try:
                        with ctx.for_range(b.load(_field(ctx, b, p, LEN))) as i:
                            mi = b.load(b.gep(data, [i, i32(0)]))
                            b.call(ctx.runtime("release"), [mi])
                    finally:
                        ctx.b = saved
                free = ctx._libc("free", ir.VoidType(), [I8P])
                b.call(free, [b.load(_field(ctx, b, p, DATA))])
                b.call(free, [p])
                _count(ctx, b, LIST_FREES)
        b.ret_void()

    return _list_fn(ctx, "release", elem, ir.FunctionType(ir.VoidType(), [I8P]), build)


def list_runtime_reserve(ctx, elem):
    """i1 reserve(i8* list, i64 need): room for ``need`` elements (capacity doubles); false when out of
    memory."""

    def build(fn, b):
        p, need = fn.args
        cap = b.load(_field(ctx, b, p, CAP))
        with b.if_then(b.icmp_signed(">", need, cap)):
            doubled = b.mul(cap, i64(2))
            new_cap = b.select(b.icmp_signed(">", need, doubled), need, doubled)
            with b.if_then(b.icmp_signed(">", new_cap, i64(MAX_BYTES // elem_size(elem)))):
                b.ret(ir.Constant(I1, 0))
            realloc = ctx._libc("realloc", I8P, [I8P, I64])
            data = b.call(realloc, [b.load(_field(ctx, b, p, DATA)), b.mul(new_cap, i64(elem_size(elem)))])
            with b.if_then(b.icmp_unsigned("==", data, ir.Constant(I8P, None))):
                b.ret(ir.Constant(I1, 0))
            b.store(data, _field(ctx, b, p, DATA))
            b.store(new_cap, _field(ctx, b, p, CAP))
        b.ret(ir.Constant(I1, 1))

    return _list_fn(ctx, "reserve", elem, ir.FunctionType(I1, [I8P, I64]), build)


def list_release(ctx, vals, t: ListType) -> None:
    ctx.b.call(list_runtime_release(ctx, t.elem), [vals[0]])


# -- helpers -------------------------------------------------------------------------------------------
def list_len(ctx, p):
    return ctx.b.load(_field(ctx, ctx.b, p, LEN))


def list_new(ctx, elem, n):
    p = ctx.b.call(list_runtime_new(ctx, elem), [n])
    ctx.raise_if(ctx.b.icmp_unsigned("==", p, ir.Constant(I8P, None)), MemoryError)
    return p


def list_load(ctx, p, elem, i) -> list:
    """The leaves of element i (registers; no reference taken)."""
    b = ctx.b
    ptr = b.gep(_data(ctx, b, p, elem), [i])
    if isinstance(elem, TensorType):
        return [b.load(b.gep(ptr, [i32(0), i32(k)])) for k in range(len(leaves(elem)))]
    x = b.load(ptr)
    return [b.icmp_unsigned("!=", x, ir.Constant(I8, 0))] if elem == BOOL else [x]


def list_store(ctx, p, elem, i, vals) -> None:
    b = ctx.b
    ptr = b.gep(_data(ctx, b, p, elem), [i])
    if isinstance(elem, TensorType):
        for k, x in enumerate(vals):
            b.store(x, b.gep(ptr, [i32(0), i32(k)]))
    else:
        b.store(b.zext(vals[0], I8) if elem == BOOL else vals[0], ptr)


def elem_retain(ctx, elem, vals) -> None:
    if isinstance(elem, TensorType):
        ctx.b.call(ctx.runtime("retain"), [vals[0]])


def elem_release(ctx, elem, vals) -> None:
    if isinstance(elem, TensorType):
        ctx.b.call(ctx.runtime("release"), [vals[0]])


def list_index(ctx, i, n, message: str):
    b = ctx.b
    j = b.select(b.icmp_signed("<", i, i64(0)), b.add(i, n), i)
    bad = b.or_(b.icmp_signed("<", j, i64(0)), b.icmp_signed(">=", j, n))
    ctx.raise_if(bad, IndexError, message)
    return j


def list_move(ctx, p, elem, dst, src, count) -> None:
    b = ctx.b
    data = b.bitcast(_data(ctx, b, p, elem), I8P)
    size = i64(elem_size(elem))
    memmove = ctx._libc("memmove", I8P, [I8P, I8P, I64])
    b.call(memmove, [b.gep(data, [b.mul(dst, size)]), b.gep(data, [b.mul(src, size)]), b.mul(count, size)])


def list_grow(ctx, p, elem, need) -> None:
    ok = ctx.b.call(list_runtime_reserve(ctx, elem), [p, need])
    ctx.raise_if(ctx.b.not_(ok), MemoryError)


def list_copy_range(ctx, src, dst, elem, first, step, count, at) -> None:
    """dst[at + k] = src[first + k*step] for k < count, taking a reference to each array."""
    b = ctx.b
    with ctx.for_range(count) as k:
        vals = list_load(ctx, src, elem, b.add(first, b.mul(k, step)))
        elem_retain(ctx, elem, vals)
        list_store(ctx, dst, elem, b.add(at, k), vals)


def _int_index(ctx, v):
    x = ctx.scalar(v)
    return ctx.b.zext(x, I64) if v.type == BOOL else x


def _equal(ctx, x, xt, y, yt):
    """``x == y`` for numbers as CPython compares them (an int and a float exactly)."""
    b = ctx.b
    if FLOAT not in (xt, yt):
        return b.icmp_signed("==", scalar_ops.to_i64(ctx, x, xt), scalar_ops.to_i64(ctx, y, yt))
    if xt == FLOAT and yt == FLOAT:
        return b.fcmp_ordered("==", x, y)
    f, i = (x, scalar_ops.to_i64(ctx, y, yt)) if xt == FLOAT else (y, scalar_ops.to_i64(ctx, x, xt))
    # equal iff the float is integral, in range, and converts to exactly that int
    in_range = b.and_(
        b.fcmp_ordered(">=", f, ir.Constant(F64, -(2.0**63))), b.fcmp_ordered("<", f, ir.Constant(F64, 2.0**63))
    )
    as_int = b.fptosi(b.select(in_range, f, ir.Constant(F64, 0.0)), I64)
    exact = b.fcmp_ordered("==", b.sitofp(as_int, F64), f)
    return b.and_(b.and_(in_range, exact), b.icmp_signed("==", as_int, i))


def _extreme(ctx, node, name, message):
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    ctx.raise_if(b.icmp_signed("==", n, i64(0)), ValueError, message)
    cur = ctx.alloca(reg_type(elem))
    b.store(list_load(ctx, p, elem, i64(0))[0], cur)
    with ctx.for_range(n, i64(1)) as i:
        (e,) = list_load(ctx, p, elem, i)
        c = b.load(cur)
        op = "<" if name == "min" else ">"
        if elem == FLOAT:
            better = b.fcmp_ordered(op, e, c)
        elif elem == BOOL:
            better = b.icmp_unsigned(op, e, c)
        else:
            better = b.icmp_signed(op, e, c)
        b.store(b.select(better, e, c), cur)
    return [[b.load(cur)]]


def _sort_function(ctx, elem, reverse: bool):
    """void sort(i8* list, i64 n): bottom-up merge sort through a scratch buffer (stable)."""

    def build(fn, b):
        p, n = fn.args
        saved, ctx.b = ctx.b, b
        try:
            _build_merge_sort(ctx, b, p, n, elem, reverse)
        finally:
            ctx.b = saved

    name = "sort_desc" if reverse else "sort"
    return _list_fn(ctx, name, elem, ir.FunctionType(ir.VoidType(), [I8P, I64]), build)


def _build_merge_sort(ctx, b, p, n, elem, reverse):
    et = elem_mem_type(elem)
    data = _data(ctx, b, p, elem)
    malloc = ctx._libc("malloc", I8P, [I64])
    free = ctx._libc("free", ir.VoidType(), [I8P])
    tmp = b.bitcast(b.call(malloc, [b.mul(b.add(n, i64(1)), i64(elem_size(elem)))]), et.as_pointer())
    src, dst = b.alloca(et.as_pointer()), b.alloca(et.as_pointer())
    b.store(data, src)
    b.store(tmp, dst)
    width, i, j = b.alloca(I64), b.alloca(I64), b.alloca(I64)
    b.store(i64(1), width)
    fnb = b.function
    outer, outer_body, done = (fnb.append_basic_block(x) for x in ("w", "w.body", "w.done"))
    b.branch(outer)
    b.position_at_end(outer)
    w = b.load(width)
    b.cbranch(b.icmp_signed("<", w, n), outer_body, done)
    b.position_at_end(outer_body)
    s, d = b.load(src), b.load(dst)
    step = b.mul(w, i64(2))
    nruns = b.sdiv(b.add(n, b.sub(step, i64(1))), step)
    with ctx.for_range(nruns) as r:
        lo = b.mul(r, step)
        mid = _min(b, b.add(lo, w), n)
        hi = _min(b, b.add(lo, step), n)
        b.store(lo, i)
        b.store(mid, j)
        with ctx.for_range(hi, lo) as k:
            iv, jv = b.load(i), b.load(j)
            i_ok = b.icmp_signed("<", iv, mid)
            j_ok = b.icmp_signed("<", jv, hi)
            x = b.load(b.gep(s, [b.select(i_ok, iv, lo)]))
            y = b.load(b.gep(s, [b.select(j_ok, jv, lo)]))
            # take from the right run only when its element goes strictly first (stability)
            right_first = _before(b, y, x, elem, reverse)
            take_j = b.and_(j_ok, b.or_(b.not_(i_ok), right_first))
            b.store(b.select(take_j, y, x), b.gep(d, [k]))
            b.store(b.select(take_j, iv, b.add(iv, i64(1))), i)
            b.store(b.select(take_j, b.add(jv, i64(1)), jv), j)
    b.store(d, src)
    b.store(s, dst)
    b.store(step, width)
    b.branch(outer)
    b.position_at_end(done)
    final = b.load(src)
    with b.if_then(b.icmp_unsigned("!=", final, data)):
        memcpy = ctx._libc("memmove", I8P, [I8P, I8P, I64])
        b.call(memcpy, [b.bitcast(data, I8P), b.bitcast(final, I8P), b.mul(n, i64(elem_size(elem)))])
    b.call(free, [b.bitcast(tmp, I8P)])
    b.ret_void()


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _before(b, y, x, elem, reverse):
    """Whether y sorts strictly before x (y < x, or y > x when reversed)."""
    op = ">" if reverse else "<"
    if elem == FLOAT:
        return b.fcmp_ordered(op, y, x)
    if elem == BOOL:
        return b.icmp_unsigned(op, y, x)
    return b.icmp_signed(op, y, x)


def _elem_arr(ctx, p, elem, j, n) -> Arr:
    """Element j as an Arr (j < n; the first element's shape is read as zeros from an empty list)."""
    b = ctx.b
    safe = b.select(b.icmp_signed("<", j, n), j, i64(0))
    nonempty = b.icmp_signed(">", n, i64(0))
    vals = list_load(ctx, p, elem, safe)
    r = elem.rank
    vals = vals[:2] + [b.select(nonempty, x, i64(0)) for x in vals[2 : 2 + r]] + vals[2 + r :]
    return Arr(elem, vals)


def _sub(ctx, out: Arr, axis: int, j) -> Arr:
    """The view out[(:,)*axis j] (no reference taken)."""
    b = ctx.b
    data = b.gep(out.data, [b.mul(j, out.strides[axis])])
    t = TensorType(out.t.dtype, out.t.rank - 1)
    return Arr(
        t, [out.mi, data, *(out.shape[:axis] + out.shape[axis + 1 :]), *(out.strides[:axis] + out.strides[axis + 1 :])]
    )


__all__ = [
    "list_counts",
    "elem_mem_type",
    "elem_size",
    "HEADER_T",
    "LIST_ALLOCATIONS",
    "LIST_FREES",
    "kind_of",
    "I8",
    "I32",
]


# -- lowering rules ----------------------------------------------------------------------------------------------------


# -- operators -----------------------------------------------------------------------------------------
@lowers("prim::ListConstruct")
def lower_list_construct(ctx, node):
    elem = node.output.type.elem
    p = list_new(ctx, elem, i64(len(node.inputs)))
    for k, v in enumerate(node.inputs):
        vals = ctx.get(v)
        elem_retain(ctx, elem, vals)
        list_store(ctx, p, elem, i64(k), vals)
    return [[p]]


@lowers("aten::list_len")
def lower_list_len(ctx, node):
    return [[list_len(ctx, ctx.scalar(node.inputs[0]))]]


@lowers("aten::list_getitem")
def lower_list_getitem(ctx, node):
    lst, index = node.inputs
    p, elem = ctx.scalar(lst), lst.type.elem
    j = list_index(ctx, _int_index(ctx, index), list_len(ctx, p), "list index out of range")
    vals = list_load(ctx, p, elem, j)
    if isinstance(elem, TensorType):
        ctx.take_ref(elem, vals)  # the output owns a reference, the list keeps its own
    return [vals]


@lowers("aten::list_setitem")
def lower_list_setitem(ctx, node):
    lst, index, value = node.inputs
    p, elem = ctx.scalar(lst), lst.type.elem
    j = list_index(ctx, _int_index(ctx, index), list_len(ctx, p), "list assignment index out of range")
    vals = ctx.get(value)
    elem_retain(ctx, elem, vals)
    old = list_load(ctx, p, elem, j)
    list_store(ctx, p, elem, j, vals)
    elem_release(ctx, elem, old)
    return []


@lowers("aten::append")
def lower_append(ctx, node):
    lst, value = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    list_grow(ctx, p, elem, b.add(n, i64(1)))
    vals = ctx.get(value)
    elem_retain(ctx, elem, vals)
    list_store(ctx, p, elem, n, vals)
    b.store(b.add(n, i64(1)), _field(ctx, b, p, LEN))
    return []


@lowers("aten::insert")
def lower_insert(ctx, node):
    lst, index, value = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    i = _int_index(ctx, index)
    # list.insert clamps: i < 0 counts from the end (then at least 0), i > len appends
    neg = b.add(i, n)
    j = b.select(
        b.icmp_signed("<", i, i64(0)),
        b.select(b.icmp_signed("<", neg, i64(0)), i64(0), neg),
        b.select(b.icmp_signed(">", i, n), n, i),
    )
    list_grow(ctx, p, elem, b.add(n, i64(1)))
    list_move(ctx, p, elem, b.add(j, i64(1)), j, b.sub(n, j))
    vals = ctx.get(value)
    elem_retain(ctx, elem, vals)
    list_store(ctx, p, elem, j, vals)
    b.store(b.add(n, i64(1)), _field(ctx, b, p, LEN))
    return []


@lowers("aten::pop")
def lower_pop(ctx, node):
    lst, index = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    ctx.raise_if(b.icmp_signed("==", n, i64(0)), IndexError, "pop from empty list")
    j = list_index(ctx, _int_index(ctx, index), n, "pop index out of range")
    vals = list_load(ctx, p, elem, j)  # the list's reference moves to the output
    list_move(ctx, p, elem, j, b.add(j, i64(1)), b.sub(b.sub(n, j), i64(1)))
    b.store(b.sub(n, i64(1)), _field(ctx, b, p, LEN))
    return [vals]


@lowers("aten::list_slice")
def lower_list_slice(ctx, node):
    lst, *bounds = node.inputs
    p, elem = ctx.scalar(lst), lst.type.elem
    start, stop, step = [None if v.type == NONE else _int_index(ctx, v) for v in bounds]
    first, length, step = views.slice_indices(ctx, start, stop, step, list_len(ctx, p))
    out = list_new(ctx, elem, length)
    list_copy_range(ctx, p, out, elem, first, step, length, i64(0))
    return [[out]]


@lowers("aten::list_add")
def lower_list_add(ctx, node):
    a, c = (ctx.scalar(v) for v in node.inputs)
    elem, b = node.output.type.elem, ctx.b
    na, nc = list_len(ctx, a), list_len(ctx, c)
    out = list_new(ctx, elem, b.add(na, nc))
    list_copy_range(ctx, a, out, elem, i64(0), i64(1), na, i64(0))
    list_copy_range(ctx, c, out, elem, i64(0), i64(1), nc, na)
    return [[out]]


@lowers("aten::list_mul")
def lower_list_mul(ctx, node):
    lst, times = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    k = _int_index(ctx, times)
    k = b.select(b.icmp_signed("<", k, i64(0)), i64(0), k)
    total = b.smul_with_overflow(n, k)
    ctx.raise_if(b.extract_value(total, 1), MemoryError)  # (CPython's, for a length beyond its sizes)
    out = list_new(ctx, elem, b.extract_value(total, 0))
    with ctx.for_range(k) as r:
        list_copy_range(ctx, p, out, elem, i64(0), i64(1), n, b.mul(r, n))
    return [[out]]


@lowers("aten::list_contains")
def lower_list_contains(ctx, node):
    lst, value = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    x = ctx.scalar(value)
    found = ctx.alloca(I1)
    b.store(ir.Constant(I1, 0), found)
    with ctx.for_range(list_len(ctx, p)) as i:
        (e,) = list_load(ctx, p, elem, i)
        hit = _equal(ctx, e, elem, x, value.type)
        b.store(b.or_(b.load(found), hit), found)
    return [[b.load(found)]]


@lowers("aten::list_sum")
def lower_list_sum(ctx, node):
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    out_t = node.output.type
    acc = ctx.alloca(reg_type(out_t))
    b.store(ir.Constant(F64, 0.0) if out_t == FLOAT else i64(0), acc)
    with ctx.for_range(list_len(ctx, p)) as i:
        (e,) = list_load(ctx, p, elem, i)
        if out_t == FLOAT:
            b.store(b.fadd(b.load(acc), e), acc)
        else:
            b.store(b.add(b.load(acc), scalar_ops.to_i64(ctx, e, elem)), acc)
    return [[b.load(acc)]]


@lowers("aten::list_min")
def lower_list_min(ctx, node):
    return _extreme(ctx, node, "min", MIN_EMPTY)


@lowers("aten::list_max")
def lower_list_max(ctx, node):
    return _extreme(ctx, node, "max", MAX_EMPTY)


@lowers("aten::sorted")
def lower_sorted(ctx, node):
    """A copy, then a stable insertion-merge sort (binary insertion within runs is stable): Python's order
    for data without NaN."""
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    out = list_new(ctx, elem, n)
    list_copy_range(ctx, p, out, elem, i64(0), i64(1), n, i64(0))
    fn = _sort_function(ctx, elem, node.attrs.get("reverse", False))
    b.call(fn, [out, n])
    return [[out]]


# -- arrays from lists ---------------------------------------------------------------------------------
@lowers("aten::list_to_array")
def lower_list_to_array(ctx, node):
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    n = list_len(ctx, p)
    out_t = node.output.type
    if not isinstance(elem, TensorType):
        out = ctx.alloc(out_t, [n])
        with ctx.for_range(n) as i:
            (x,) = list_load(ctx, p, elem, i)
            ctx.store_element(ctx.element_ptr(out, [i]), x, {INT: "i", FLOAT: "f", BOOL: "b"}[elem], out_t.dtype)
        return [out.leaves]
    rank = elem.rank
    first = _elem_arr(ctx, p, elem, i64(0), n)
    # NumPy: the leading dimensions every element shares with the first; fewer than all is an error
    agree = ctx.alloca(I64)
    b.store(i64(rank), agree)
    with ctx.for_range(n, i64(1)) as j:
        a = _elem_arr(ctx, p, elem, j, n)
        m = i64(rank)
        for d in reversed(range(rank)):
            m = b.select(b.icmp_signed("!=", a.shape[d], first.shape[d]), i64(d), m)
        b.store(_min(b, b.load(agree), m), agree)
    m = b.load(agree)
    for k in range(rank):
        shape = "(" + ", ".join(f"{{{x}}}" for x in range(k + 1)) + (",)" if k == 0 else ")")
        ctx.raise_with(
            b.icmp_signed("==", m, i64(k)),
            ValueError,
            "setting an array element with a sequence. The requested array has an inhomogeneous "
            f"shape after {k + 1} dimensions. The detected shape was {shape} + inhomogeneous part.",
            [n, *first.shape[:k]],
        )
    out = ctx.alloc(out_t, [n, *first.shape])
    with ctx.for_range(n) as j:
        a = _elem_arr(ctx, p, elem, j, n)
        ctx.copy_into(_sub(ctx, out, 0, j), a)
    return [out.leaves]


@lowers("aten::concatenate")
def lower_concatenate(ctx, node):
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    rank = elem.rank
    axis = node.attrs.get("axis", 0) % rank
    n = list_len(ctx, p)
    ctx.raise_if(b.icmp_signed("==", n, i64(0)), ValueError, "need at least one array to concatenate")
    first = _elem_arr(ctx, p, elem, i64(0), n)
    total = ctx.alloca(I64)
    b.store(first.shape[axis], total)
    with ctx.for_range(n, i64(1)) as j:
        a = _elem_arr(ctx, p, elem, j, n)
        for d in range(rank):
            if d == axis:
                continue
            ctx.raise_with(
                b.icmp_signed("!=", a.shape[d], first.shape[d]),
                ValueError,
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but along dimension {d}, the array at index 0 has size {{0}} and the "
                "array at index {1} has size {2}",
                [first.shape[d], j, a.shape[d]],
            )
        b.store(b.add(b.load(total), a.shape[axis]), total)
    shape = list(first.shape)
    shape[axis] = b.load(total)
    out = ctx.alloc(node.output.type, shape)
    at = ctx.alloca(I64)
    b.store(i64(0), at)
    with ctx.for_range(n) as j:
        a = _elem_arr(ctx, p, elem, j, n)
        start = b.load(at)
        data = b.gep(out.data, [b.mul(start, out.strides[axis])])
        part_shape = list(out.shape)
        part_shape[axis] = a.shape[axis]
        ctx.copy_into(Arr(out.t, [out.mi, data, *part_shape, *out.strides]), a)
        b.store(b.add(start, a.shape[axis]), at)
    return [out.leaves]


@lowers("aten::stack")
def lower_stack(ctx, node):
    (lst,) = node.inputs
    p, elem, b = ctx.scalar(lst), lst.type.elem, ctx.b
    axis = node.attrs.get("axis", 0) % (elem.rank + 1)
    n = list_len(ctx, p)
    ctx.raise_if(b.icmp_signed("==", n, i64(0)), ValueError, "need at least one array to stack")
    first = _elem_arr(ctx, p, elem, i64(0), n)
    with ctx.for_range(n, i64(1)) as j:
        a = _elem_arr(ctx, p, elem, j, n)
        bad = ir.Constant(I1, 0)
        for d in range(elem.rank):
            bad = b.or_(bad, b.icmp_signed("!=", a.shape[d], first.shape[d]))
        ctx.raise_if(bad, ValueError, "all input arrays must have the same shape")
    shape = list(first.shape)
    shape.insert(axis, n)
    out = ctx.alloc(node.output.type, shape)
    with ctx.for_range(n) as j:
        ctx.copy_into(_sub(ctx, out, axis, j), _elem_arr(ctx, p, elem, j, n))
    return [out.leaves]
