"""Arrays in native code: the runtime (allocation, reference counts), element access, indexing, creation and
copies (views: views.py). How each dtype converts to and from registers is conversions.py; element-wise operators
and reductions are in array_math.py.

An array value is the leaves ``(meminfo, data, shape..., strides...)`` (common.leaves). A meminfo is the start
of an allocation: an i64 reference count, then, ``HEADER`` bytes in, the data (64-byte aligned). Views share
their base's meminfo and take a reference; arrays borrowed from the caller have a null meminfo and are never
freed. Semantics are NumPy's: Python's slice rules, negative indices wrap, IndexError out of bounds with
NumPy's message, assignment casts to the destination dtype and reads overlapping sources as copied first.
"""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np
from llvmlite import ir

from ....ir.types import TensorType, element_type
from . import array_math, conversions, parallel, summation, views
from ..runtime import symbols
from .common import F64, I1, I8, I8P, I32, I64, i32, i64, leaves, loop_hints, process_global, reg_type
from .rules import lowers_array
from ..runtime.text_builder import TextBuilder
from .array_value import ELEM, TOO_BIG, Arr, index_checked, kind_of, scalar_kind

HEADER = 64
SMALL_DATA = 256  # array data up to this many bytes comes from malloc (allocate_block)
HUGE_PAGE_MIN = 1 << 22  # NumPy's threshold for madvise(MADV_HUGEPAGE)
MADV_HUGEPAGE = 14
# Arrays native code has allocated in this process (a test hook: fused code allocates only its result).
ALLOCATIONS = symbols.ALLOCATIONS
ALLOCATIONS_ADDRESS = ctypes.addressof(ALLOCATIONS)
# Arrays native code has freed (dropping their last reference); the arrays a call that raises allocated are all
# freed before it returns, so both counters move by the same amount (test_raise_memory.py).
FREES = symbols.FREES
FREES_ADDRESS = ctypes.addressof(FREES)


def allocation_count() -> int:
    return ALLOCATIONS.value


def free_count() -> int:
    return FREES.value


class ArrayOps:
    """Part of FunctionLowering's core: the array runtime, allocation, element access and loops."""

    # -- runtime ------------------------------------------------------------------------------------------
    def runtime(self, name: str) -> ir.Function:
        decls = self.mod._decls
        if self.atomic_refcounts and name in ("alloc", "retain", "release"):
            name += "_atomic"  # in a parallel loop's kernel (parallel.py)
        key = "scriptc.rt." + name
        if key not in decls:
            decls[key] = runtime_builder(name)(self, key)
        return decls[key]

    def _libc(self, name: str, ret, args) -> ir.Function:
        decls = self.mod._decls
        if name not in decls:
            decls[name] = ir.Function(self.mod.module, ir.FunctionType(ret, args), name)
        return decls[name]

    def _build_rt_alloc(self, key):
        """i8* alloc(i64 nbytes): a meminfo with one reference and room for the data; null when out of memory."""
        fn = ir.Function(self.mod.module, ir.FunctionType(I8P, [I64]), key)
        fn.linkage = "internal"
        b = TextBuilder(fn.append_basic_block())
        size = b.and_(b.add(fn.args[0], i64(HEADER + 63)), i64(-64))
        p = self.allocate_block(b, fn, size)
        ok, fail = fn.append_basic_block("ok"), fn.append_basic_block("fail")
        b.cbranch(b.icmp_unsigned("==", p, ir.Constant(I8P, None)), fail, ok)
        b.position_at_end(ok)
        # as NumPy does for data of 4 MiB or more: ask for transparent huge pages (where the kernel's policy is
        # "madvise"), so that first touching a big result costs 1 page fault per 2 MiB instead of per 4 KiB
        with b.if_then(b.icmp_unsigned(">=", size, i64(HUGE_PAGE_MIN))):
            start = b.and_(b.add(b.ptrtoint(p, I64), i64(4095)), i64(-4096))
            length = b.sub(size, b.sub(start, b.ptrtoint(p, I64)))
            b.call(self._libc("madvise", I32, [I8P, I64, I32]), [b.inttoptr(start, I8P), length, i32(MADV_HUGEPAGE)])
        b.store(i64(1), b.bitcast(p, I64.as_pointer()))
        counter = process_global(self.mod.module, "scriptc.allocations", ALLOCATIONS_ADDRESS, I64)
        b.store(b.add(b.load(counter), i64(1)), counter)
        b.ret(p)
        b.position_at_end(fail)
        b.ret(ir.Constant(I8P, None))
        return fn

    def allocate_block(self, b, fn, size):
        """``size`` bytes (a multiple of 64) for a meminfo and its data: 64-byte aligned (cache lines, as NumPy's
        SIMD loops like) from ``aligned_alloc``, except data of at most ``SMALL_DATA`` bytes, for which
        ``malloc``'s 16-byte alignment is enough (no load or store assumes more than the item size) and which
        ``aligned_alloc`` would make several times slower to get (2-element arrays made in a loop)."""
        small = b.icmp_unsigned("<=", size, i64(HEADER + SMALL_DATA))
        with b.if_else(small) as (then, otherwise):
            with then:
                p_small = b.call(self._libc("malloc", I8P, [I64]), [size])
                small_block = b.block
            with otherwise:
                p_big = b.call(self._libc("aligned_alloc", I8P, [I64, I64]), [i64(64), size])
                big_block = b.block
        p = b.phi(I8P)
        p.add_incoming(p_small, small_block)
        p.add_incoming(p_big, big_block)
        return p

    def _build_rt_retain(self, key):
        fn = ir.Function(self.mod.module, ir.FunctionType(ir.VoidType(), [I8P]), key)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        b = TextBuilder(fn.append_basic_block())
        with b.if_then(b.icmp_unsigned("!=", fn.args[0], ir.Constant(I8P, None))):
            rc = b.bitcast(fn.args[0], I64.as_pointer())
            b.store(b.add(b.load(rc), i64(1)), rc)
        b.ret_void()
        return fn

    def _build_rt_release(self, key):
        fn = ir.Function(self.mod.module, ir.FunctionType(ir.VoidType(), [I8P]), key)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        b = TextBuilder(fn.append_basic_block())
        with b.if_then(b.icmp_unsigned("!=", fn.args[0], ir.Constant(I8P, None))):
            rc = b.bitcast(fn.args[0], I64.as_pointer())
            n = b.sub(b.load(rc), i64(1))
            b.store(n, rc)
            with b.if_then(b.icmp_signed("==", n, i64(0))):
                b.call(self._libc("free", ir.VoidType(), [I8P]), [fn.args[0]])
                counter = process_global(self.mod.module, "scriptc.frees", FREES_ADDRESS, I64)
                b.store(b.add(b.load(counter), i64(1)), counter)
        b.ret_void()
        return fn

    def array_release(self, vals) -> None:
        self.b.call(self.runtime("release"), [vals[0]])

    def arr(self, v) -> Arr:
        return Arr(v.type, self.get(v))

    def alloc(self, t: TensorType, shape: list) -> Arr:
        """A new C-contiguous array of this type and shape; NumPy's ValueErrors for a negative dimension and for
        a size in bytes beyond int64 (the product of the dimensions other than 0, checked as it is made), and its
        MemoryError. One call to the module's allocator for the rank and item size, which stores the meminfo in
        ``allocation_slot()`` (where the error path finds it) and returns 0 or the error code it was given."""
        b = self.b
        itemsize = np.dtype(t.dtype).itemsize
        dims = ", ".join(f"{{{k + 1}}}" for k in range(len(shape))) + ("," if len(shape) == 1 else "")
        codes = [
            self.error_code(ValueError, "negative dimensions are not allowed"),
            self.error_code(ValueError, TOO_BIG),
            self.error_code(
                MemoryError,  # NumPy's message
                f"Unable to allocate {{0!B}} for an array with shape ({dims}) and data type {t.dtype}",
                values=1 + len(shape),
            ),
        ]
        slot = self.allocation_slot()
        status = b.call(self._allocator(len(shape), itemsize), [slot, *shape, *map(i32, codes)])
        with b.if_then(b.icmp_unsigned("!=", status, i32(0)), likely=False):
            self.fail(status)
        mi = b.load(slot)
        return Arr(t, [mi, b.gep(mi, [i64(HEADER)]), *shape, *self.c_strides(shape, itemsize)])

    def _allocator(self, rank: int, itemsize: int) -> ir.Function:
        """``i32 alloc_array(i8** slot, i64 dims..., i32 negative, i32 too_big, i32 no_memory)``: ``alloc``'s
        checks and allocation, once per module, rank and item size (inlined at O3; a call in the first tier: inline,
        they were ~40 lines of IR per allocation, the MLP training step's 33 in its body)."""
        atomic = self.atomic_refcounts
        key = f"scriptc.rt.alloc_array.{rank}.{itemsize}" + (".atomic" if atomic else "")
        fn = self.mod._decls.get(key)
        if fn is not None:
            return fn
        fn = self.mod._decls[key] = ir.Function(
            self.mod.module, ir.FunctionType(I32, [I8P.as_pointer(), *[I64] * rank, I32, I32, I32]), key
        )
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        slot, dims, (negative, too_big, no_memory) = fn.args[0], fn.args[1 : 1 + rank], fn.args[1 + rank :]
        b = TextBuilder(fn.append_basic_block())
        nbytes, zero = i64(itemsize), ir.Constant(I1, 0)
        for d in dims:
            with b.if_then(b.icmp_signed("<", d, i64(0)), likely=False):
                b.ret(negative)
            is_zero = b.icmp_signed("==", d, i64(0))
            product = b.smul_with_overflow(nbytes, b.select(is_zero, i64(1), d))
            with b.if_then(b.extract_value(product, 1), likely=False):
                b.ret(too_big)
            nbytes, zero = b.extract_value(product, 0), b.or_(zero, is_zero)
        mi = b.call(self.runtime("alloc"), [b.select(zero, i64(0), nbytes)])
        with b.if_then(b.icmp_unsigned("==", mi, ir.Constant(I8P, None)), likely=False):
            self.write_payload(b, [nbytes, *dims])
            b.ret(no_memory)
        b.store(mi, slot)
        b.ret(i32(0))
        return fn

    def c_strides(self, shape: list, itemsize: int) -> list:
        """Byte strides of a C-contiguous (row-major) array of this shape."""
        if not shape:
            return []
        strides = [i64(itemsize)]
        for d in reversed(shape[1:]):  # (the outermost dimension's length scales nothing)
            strides.insert(0, self.b.mul(strides[0], d))
        return strides

    def element_count(self, shape: list):
        n = i64(1)
        for d in shape:
            n = self.b.mul(n, d)
        return n

    # -- elements -----------------------------------------------------------------------------------------
    def element_ptr(self, a: Arr, index: list):
        """The address of ``a[index]``, offsets in bytes (the loops scriptc generates itself: fused groups,
        copies, reductions, which have their own contiguous paths)."""
        b = self.b
        offset = i64(0)
        for i, s in zip(index, a.strides):
            offset = b.add(offset, b.mul(i, s))
        return b.bitcast(b.gep(a.data, [offset]), ELEM[a.t.dtype].as_pointer())

    def user_element_ptr(self, a: Arr, index: list):
        """The address of ``a[index]`` for an element the program indexes (``x[i, j]`` in the user's loops). The
        last index steps in items, not bytes (its stride divided by the item size): LLVM's vectorizer then
        versions a loop over it on a unit stride (run-time check, contiguous vector loads and stores) where a
        byte offset would leave it gathers. Exact: the strides of an aligned array are multiples of its item
        size in every dimension longer than 1 (NumPy's ``aligned`` flag; unaligned arguments run on aligned
        twins, realign.py), and an index into a dimension of length 1 is 0. (Not for scriptc's own loops: their
        short strided loops, syr2k's and adi's columns, ran 1.5x slower versioned.)"""
        b = self.b
        if not index:
            return b.bitcast(a.data, ELEM[a.t.dtype].as_pointer())
        offset = i64(0)
        for i, s in zip(index[:-1], a.strides):
            offset = b.add(offset, b.mul(i, s))
        row = b.bitcast(b.gep(a.data, [offset]) if len(index) > 1 else a.data, ELEM[a.t.dtype].as_pointer())
        items = a.strides[len(index) - 1]
        size = np.dtype(a.t.dtype).itemsize
        if size > 1:
            items = b.ashr(items, i64(size.bit_length() - 1))
        return b.gep(row, [b.mul(index[-1], items)])

    def load_element(self, ptr, dtype: str):
        """Load and widen to the register kind (kind_of)."""
        return conversions.from_memory(self, self.b.load(ptr), dtype)

    def store_element(self, ptr, x, kind: str, dtype: str) -> None:
        """Convert ``x`` of register kind ``kind`` to ``dtype`` (NumPy's unsafe cast) and store it."""
        self.b.store(conversions.to_memory(self, x, kind, dtype), ptr)

    def scalar_operand(self, v):
        """(kind, register value) of a Python scalar operand."""
        return scalar_kind(v.type), self.scalar(v)

    def scalar_result(self, x, kind: str, t) -> list:
        """The leaves of a scalar of IR type ``t`` from a register value of ``kind``."""
        return [conversions.cast(self, x, kind, scalar_kind(t))]

    @contextlib.contextmanager
    def for_range(self, n, start=None, hints=()):
        """``for i in range(start or 0, n)``: yields i inside the loop body. ``hints``: LLVM loop hints beside
        the module's (``common.loop_hints``)."""
        b = self.b
        fn = b.function
        pre = b.block
        header, body, done = fn.append_basic_block("for"), fn.append_basic_block("body"), fn.append_basic_block("done")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64)
        i.add_incoming(start if start is not None else i64(0), pre)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        yield i
        i.add_incoming(b.add(i, i64(1)), b.block)
        self.back_edge(header, hints)
        b.position_at_end(done)

    def back_edge(self, header, hints=()) -> None:
        """Branch back to the header of a loop the lowering made, with the module's loop hints (and ``hints``)."""
        branch = self.b.branch(header)
        if self.mod.target.loop_hints:
            loop_hints(self.mod.module, branch, *self.mod.target.loop_hints, *hints)

    def loop_nest(self, shape: list, body, inner_hints=()) -> None:
        """Call ``body(index)`` for every index of ``shape`` in row-major order; ``inner_hints``: LLVM loop hints
        for the innermost loop."""

        def level(k, index):
            if k == len(shape):
                body(index)
                return
            with self.for_range(shape[k], hints=inner_hints if k == len(shape) - 1 else ()) as i:
                level(k + 1, index + [i])

        level(0, [])

    def in_memory_order(self, target: Arr, others: list) -> tuple:
        """``target`` and ``others`` (of its rank, indexed alike) with their axes reordered the same way, so
        that ``loop_nest`` over the result's shape walks ``target`` as NumPy's ufunc loops walk an output (its
        iterator's order 'K': the axis of largest absolute stride outermost, ties in C order; a negative stride
        is walked as it is), which decides the elements written before an element raises."""
        b, rank = self.b, target.t.rank
        arrays = [target, *others]
        shape = list(target.shape)
        strides = [list(a.strides) for a in arrays]
        magnitude = [abs_int(self, s) for s in strides[0]]
        for end in range(rank - 1, 0, -1):  # a stable sorting network of selects
            for k in range(end):
                swap = b.icmp_signed("<", magnitude[k], magnitude[k + 1])
                for row in (shape, magnitude, *strides):
                    row[k], row[k + 1] = b.select(swap, row[k + 1], row[k]), b.select(swap, row[k], row[k + 1])
        return tuple(Arr(a.t, [a.mi, a.data, *shape, *st]) for a, st in zip(arrays, strides))

    def alloca_leaves(self, t):
        return [self.alloca(reg_type(x)) for x in leaves(t)]

    def store_leaves(self, slots, vals) -> None:
        for slot, v in zip(slots, vals):
            self.b.store(v, slot)

    def load_leaves(self, slots) -> list:
        return [self.b.load(s) for s in slots]

    def memset_zero(self, a: Arr) -> None:
        memset = self.mod.module.declare_intrinsic("llvm.memset", [I8P, I64])
        self.b.call(
            memset,
            [a.data, ir.Constant(I8, 0), self.b.mul(self.element_count(a.shape), i64(a.itemsize)), ir.Constant(I1, 0)],
        )

    def copy_into(self, dst: Arr, src: Arr, src_strides=None) -> None:
        """dst[...] = src, element by element with a cast; ``src_strides`` broadcasts (stride 0). A copy of at
        least one dimension calls a loop nest compiled once per process for its dtypes and ranks: inline, each
        copy was some 300 lines of IR for LLVM to optimize again (four border copies: half of a stencil's
        compile time)."""
        strides = src_strides if src_strides is not None else src.strides
        rank, src_rank = dst.t.rank, len(strides)
        if rank == 0:
            return self.copy_loops(dst, Arr(src.t, [src.mi, src.data]))
        fnty = ir.FunctionType(ir.VoidType(), [I8P, *[I64] * (2 * rank), I8P, *[I64] * src_rank])

        def build(lowering, fn):
            data, *rest = fn.args
            shape, dst_strides, (src_data, *src_strides) = rest[:rank], rest[rank : 2 * rank], rest[2 * rank :]
            null = ir.Constant(I8P, None)
            lowering.copy_loops(
                Arr(TensorType(dst.t.dtype, rank), [null, data, *shape, *dst_strides]),
                Arr(TensorType(src.t.dtype, src_rank), [null, src_data, *shape[rank - src_rank :], *src_strides]),
            )
            lowering.b.ret_void()

        copy = summation.call_compiled_once(self, ("copy", src.t.dtype, dst.t.dtype, rank, src_rank), fnty, build)
        self.b.call(copy, [dst.data, *dst.shape, *dst.strides, src.data, *strides])

    def copy_loops(self, dst: Arr, view: Arr) -> None:
        """The loop nest of ``copy_into``: ``view`` has the trailing dimensions of ``dst`` (broadcast strides)."""
        rank = view.t.rank

        def body(index):
            x = self.load_element(self.element_ptr(view, index[len(index) - rank :]), view.t.dtype)
            self.store_element(self.element_ptr(dst, index), x, kind_of(view.t.dtype), dst.t.dtype)

        self.loop_nest(dst.shape, body)

    def extent(self, a: Arr):
        """[lowest, highest) addresses an array touches, as i64 (equal bounds when it is empty)."""
        b = self.b
        lo = hi = b.ptrtoint(a.data, I64)
        empty = ir.Constant(I1, 0)
        for d, s in zip(a.shape, a.strides):
            empty = b.or_(empty, b.icmp_signed("==", d, i64(0)))
            span = b.mul(b.sub(d, i64(1)), s)
            neg = b.icmp_signed("<", span, i64(0))
            lo = b.add(lo, b.select(neg, span, i64(0)))
            hi = b.add(hi, b.select(neg, i64(0), span))
        hi = b.add(hi, i64(a.itemsize))
        return lo, b.select(empty, lo, hi)

    def same_view(self, a: Arr, c: Arr):
        """i1: ``a`` and ``c`` are the very same elements (data, shape and strides), as NumPy's exact alias."""
        b = self.b
        if a.t.rank != c.t.rank:
            return ir.Constant(I1, 0)
        same = b.icmp_unsigned("==", b.ptrtoint(a.data, I64), b.ptrtoint(c.data, I64))
        for x, y in zip(a.shape + a.strides, c.shape + c.strides):
            same = b.and_(same, b.icmp_signed("==", x, y))
        return same

    def overlaps(self, a: Arr, c: Arr):
        b = self.b
        alo, ahi = self.extent(a)
        clo, chi = self.extent(c)
        return b.and_(b.icmp_unsigned("<", alo, chi), b.icmp_unsigned("<", clo, ahi))

    def unaliased(self, src: Arr, dst: Arr) -> Arr:
        """``src``, or a private copy of it when it shares memory with ``dst`` (NumPy reads such sources as if
        copied first). The copy is released after the caller's use by ``release_temp``."""
        b = self.b
        slots = self.alloca_leaves(src.t)
        self.store_leaves(slots, src.leaves)
        with b.if_then(self.overlaps(src, dst), likely=False):
            tmp = self.alloc(TensorType(src.t.dtype, src.t.rank), src.shape)
            self.copy_into(tmp, src)
            self.store_leaves(slots, tmp.leaves)
        return Arr(src.t, self.load_leaves(slots))


# -- lowering rules ----------------------------------------------------------------------------------------------------


# -- shape queries ------------------------------------------------------------------------------------
@lowers_array("aten::size")
def lower_size(ctx, node):
    return [ctx.arr(node.inputs[0]).shape]


@lowers_array("aten::dim")
def lower_dim(ctx, node):
    return [[i64(node.inputs[0].type.rank)]]


@lowers_array("aten::numel")
def lower_numel(ctx, node):
    return [[ctx.element_count(ctx.arr(node.inputs[0]).shape)]]


@lowers_array("aten::len")
def lower_len(ctx, node):
    return [[ctx.arr(node.inputs[0]).shape[0]]]


# -- element access -------------------------------------------------------------------------------
@lowers_array("aten::getitem")
def lower_getitem(ctx, node):
    a = ctx.arr(node.inputs[0])
    index = [
        views.normalize_index(ctx, ctx.scalar(v), n, k, index_checked(node, k))
        for k, (v, n) in enumerate(zip(node.inputs[1:], a.shape))
    ]
    x = ctx.load_element(ctx.user_element_ptr(a, index), a.t.dtype)
    return [ctx.scalar_result(x, kind_of(a.t.dtype), element_type(a.t.dtype))]


@lowers_array("aten::setitem")
def lower_setitem(ctx, node):
    a = ctx.arr(node.inputs[0])
    *idx, value = node.inputs[1:]
    index = [
        views.normalize_index(ctx, ctx.scalar(v), n, k, index_checked(node, k))
        for k, (v, n) in enumerate(zip(idx, a.shape))
    ]
    kind, x = conversions.element_from_python(ctx, value, a.t.dtype)
    ctx.store_element(ctx.user_element_ptr(a, index), x, kind, a.t.dtype)
    return []


# -- creation -------------------------------------------------------------------------------------
@lowers_array("aten::zeros", "aten::ones", "aten::empty", "aten::full")
def lower_create(ctx, node):
    t = node.output.type
    op = node.kind.split("::")[1]
    value = node.inputs[0] if op == "full" else None
    dims = [ctx.scalar(v) for v in (node.inputs[1:] if value is not None else node.inputs)]
    out = ctx.alloc(t, dims)
    if op == "zeros":
        ctx.memset_zero(out)
    elif op != "empty":
        kind, x = conversions.filled_from_python(ctx, value, t.dtype) if value is not None else ("i", i64(1))
        fill(ctx, out, kind, x)
    return [out.leaves]


@lowers_array("aten::zeros_like", "aten::ones_like", "aten::empty_like", "aten::full_like")
def lower_create_like(ctx, node):
    t = node.output.type
    op = node.kind.split("::")[1]
    out = ctx.alloc(t, ctx.arr(node.inputs[0]).shape)
    if op == "zeros_like":
        ctx.memset_zero(out)
    elif op == "ones_like":
        fill(ctx, out, "i", i64(1))
    elif op == "full_like":
        fill(ctx, out, *conversions.filled_from_python(ctx, node.inputs[1], out.t.dtype))
    return [out.leaves]


@lowers_array("aten::fill_")
def lower_fill_(ctx, node):
    a = ctx.arr(node.inputs[0])
    fill(ctx, a, *conversions.element_from_python(ctx, node.inputs[1], a.t.dtype))
    return []


@lowers_array("aten::arange")
def lower_arange(ctx, node):
    """NumPy's PyArray_ArangeObj: length ceil((stop - start) / step) with Python's arithmetic on the
    arguments, element 0 = start, element 1 = start + step, and element i = start + i*delta for i >= 2
    with delta = (start + step) - start (the dtype's fill function)."""
    b = ctx.b
    t = node.output.type
    operands = [ctx.scalar_operand(v) for v in node.inputs]
    if all(k != "f" for k, _ in operands):
        n, first, second, delta = arange_int(ctx, [conversions.cast(ctx, x, k, "i") for k, x in operands])
        kind = "i"
    else:
        n, first, second, delta = arange_float(ctx, [conversions.cast(ctx, x, k, "f") for k, x in operands])
        kind = "f"
    out = ctx.alloc(t, [n])
    with ctx.for_range(n) as i:
        if kind == "f":
            x = b.fadd(first, b.fmul(b.sitofp(i, F64), delta))
        else:
            x = b.add(first, b.mul(i, delta))
        x = b.select(b.icmp_signed("==", i, i64(0)), first, b.select(b.icmp_signed("==", i, i64(1)), second, x))
        ctx.store_element(ctx.element_ptr(out, [i]), x, kind, t.dtype)
    return [out.leaves]


@lowers_array("aten::linspace")
def lower_linspace(ctx, node):
    b = ctx.b
    t = node.output.type
    (ka, a), (kb, z), (_, num) = [ctx.scalar_operand(v) for v in node.inputs]
    a, z = conversions.cast(ctx, a, ka, "f"), conversions.cast(ctx, z, kb, "f")
    ctx.raise_with(b.icmp_signed("<", num, i64(0)), ValueError, "Number of samples, {0}, must be non-negative.", [num])
    out = ctx.alloc(t, [num])
    div = b.sub(num, i64(1))
    delta = b.fsub(z, a)
    has_div = b.icmp_signed(">", div, i64(0))
    step = b.fdiv(delta, b.sitofp(b.select(has_div, div, i64(1)), F64))
    with ctx.for_range(num) as i:
        fi = b.sitofp(i, F64)
        y = b.select(
            has_div,
            b.select(
                b.fcmp_ordered("==", step, ir.Constant(F64, 0.0)),
                b.fmul(b.fdiv(fi, b.sitofp(div, F64)), delta),
                b.fmul(fi, step),
            ),
            b.fmul(fi, delta),
        )
        y = b.fadd(y, a)
        last = b.and_(has_div, b.icmp_signed("==", i, div))
        ctx.store_element(ctx.element_ptr(out, [i]), b.select(last, z, y), "f", t.dtype)
    return [out.leaves]


# -- copies -----------------------------------------------------------------------------------------
@lowers_array("aten::clone", "aten::to")
def lower_copy(ctx, node):
    a = ctx.arr(node.inputs[0])
    out = ctx.alloc(node.output.type, a.shape)
    ctx.copy_into(out, a)
    return [out.leaves]


@lowers_array("aten::copy_")
def lower_copy_(ctx, node):
    dst = ctx.arr(node.inputs[0])
    src_v = node.inputs[1]
    if not isinstance(src_v.type, TensorType):
        fill(ctx, dst, *conversions.element_from_python(ctx, src_v, dst.t.dtype))
        return []
    src = ctx.arr(src_v)
    source = ctx.unaliased(src, dst)
    ctx.copy_into(dst, source, array_math.broadcast_to(ctx, source, dst.shape, "copy"))
    ctx.release_temp(source, src)
    return []


def abs_int(ctx, v):
    b = ctx.b
    return b.select(b.icmp_signed("<", v, i64(0)), b.neg(v), v)


def fill(ctx, a: Arr, kind: str, x) -> None:
    ctx.loop_nest(a.shape, lambda index: ctx.store_element(ctx.element_ptr(a, index), x, kind, a.t.dtype))


def arange_int(ctx, args):
    """(length, start, start + step, delta) for int arguments: Python's exact difference, true division
    rounded to double (exactly NumPy's length while |stop - start| and |step| are below 2**53)."""
    b = ctx.b
    start, stop, step = args
    ctx.raise_if(b.icmp_signed("==", step, i64(0)), ZeroDivisionError, "division by zero")
    diff = b.ssub_with_overflow(stop, start)
    exact = b.sitofp(b.extract_value(diff, 0), F64)
    approx = b.fsub(b.sitofp(stop, F64), b.sitofp(start, F64))
    q = b.fdiv(b.select(b.extract_value(diff, 1), approx, exact), b.sitofp(step, F64))
    nonzero = b.or_(b.extract_value(diff, 1), b.icmp_signed("!=", b.extract_value(diff, 0), i64(0)))
    n = arange_length(ctx, q, nonzero)
    second = b.sadd_with_overflow(start, step)
    ctx.raise_if(
        b.and_(b.icmp_signed(">=", n, i64(2)), b.extract_value(second, 1)),
        OverflowError,
        "Python int too large to convert to C long",
    )
    return n, start, b.extract_value(second, 0), step


def arange_float(ctx, args):
    b = ctx.b
    start, stop, step = args
    ctx.raise_if(b.fcmp_ordered("==", step, ir.Constant(F64, 0.0)), ZeroDivisionError, "float division by zero")
    diff = b.fsub(stop, start)
    n = arange_length(ctx, b.fdiv(diff, step), b.fcmp_unordered("!=", diff, ir.Constant(F64, 0.0)))
    second = b.fadd(start, step)
    return n, start, second, b.fsub(second, start)


def arange_length(ctx, q, diff_nonzero):
    """_arange_safe_ceil_to_intp(q), NumPy's errors, and its underflow rule: a zero quotient of a non-zero
    difference is one element, or none when the zero is negative."""
    b = ctx.b
    zero = ir.Constant(F64, 0.0)
    c = b.call(ctx.mod.intrinsic("ceil"), [q])
    ctx.raise_if(b.fcmp_unordered("uno", c, c), ValueError, "arange: cannot compute length")
    in_range = b.and_(
        b.fcmp_ordered(">=", c, ir.Constant(F64, -(2.0**63))), b.fcmp_ordered("<=", c, ir.Constant(F64, 2.0**63))
    )
    ctx.raise_if(b.not_(in_range), ValueError, "Maximum allowed size exceeded")
    n = conversions.float_to_int(ctx, c, "int64")  # 2**63 becomes INT64_MIN there too: no elements
    negative = b.icmp_signed("<", b.bitcast(q, I64), i64(0))
    underflow = b.select(negative, i64(0), i64(1))
    n = b.select(b.and_(b.fcmp_ordered("==", q, zero), diff_nonzero), underflow, n)
    return b.select(b.icmp_signed(">", n, i64(0)), n, i64(0))


def runtime_builder(name: str):
    """The builder of runtime function ``name``, declared once per module by ``runtime(name)`` (``*_atomic``: a
    prange kernel's). Looked up when called: the builders' modules import this one."""
    return {
        "alloc": ArrayOps._build_rt_alloc,
        "retain": ArrayOps._build_rt_retain,
        "release": ArrayOps._build_rt_release,
        "alloc_atomic": parallel.build_rt_alloc_atomic,
        "retain_atomic": parallel.build_rt_retain_atomic,
        "release_atomic": parallel.build_rt_release_atomic,
        "double_to_half": conversions.build_rt_double_to_half,
        "half_to_double": conversions.build_rt_half_to_double,
    }[name]
