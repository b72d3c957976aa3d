"""A reduction along one axis (``np.sum(x, axis=1)``, ``x.max(axis=0)``, ...) as a GPU kernel: one thread per
result element, each combining its line of the operand in index order — the same order for every launch
configuration, so results do not depend on the block size.

    void kernel(i8* noalias out, i64 n, i64 out_shape[rank - 1],
                i8* data, i64 strides[rank - 1], i64 length, i64 stride)

``out`` is a new C-contiguous array of the result's shape; ``strides`` are the operand's byte strides along
the kept axes, ``length`` and ``stride`` the reduced axis's. Neighbouring threads read neighbouring elements
when the reduced axis is not the innermost one (``axis=0`` of a C array: coalesced loads); along the innermost
axis each thread walks its own row.

Accumulators are the full reductions' (block_reduce.py): float sums in double, rounded once to the result's
dtype; NaN propagates through max and min as in NumPy. Empty lines (NumPy's identity or ValueError) are the
host's business: the executor does not launch for them.
"""

from __future__ import annotations

from ..llvm.lowering.array_value import ELEM, kind_of
from ..llvm.lowering.array_math import reduction_dtype
from ..llvm.lowering.common import I8P, I64, i64
from ..llvm.lowering.lower import FunctionLowering
from .params import ELEM_BYTES, PARAM_CTYPE
from .intrinsics import grid_stride_loop, special
from ..llvm.lowering import array_math, conversions, sum_reductions


def add_axis_reduction(km, kernel):
    """Fill in ``kernel`` (a group of one axis reduction): its parameters and its code in ``km``'s module."""
    reduction = kernel.axis_reduction
    src = reduction.inputs[0].type
    axis = reduction.attrs["axis"] % src.rank
    kept = src.rank - 1
    params = [I8P, I64] + [I64] * kept + [I8P] + [I64] * kept + [I64, I64]
    kernel.params = [PARAM_CTYPE[str(t)] for t in params]
    kernel.arrays = [0]
    kernel.axis = axis
    fn = km._kernel_function(kernel.name, params)
    low = FunctionLowering.into(km.mod, fn, kernel.node, nogil=True)
    b = low.b
    out, n = fn.args[0], fn.args[1]
    out.add_attribute("noalias")
    out_shape = fn.args[2 : 2 + kept]
    data, strides = fn.args[2 + kept], fn.args[3 + kept : 3 + 2 * kept]
    length, stride = fn.args[3 + 2 * kept], fn.args[4 + 2 * kept]

    name = reduction.kind.split("::")[1]
    result = reduction_dtype(reduction.kind, src, axis)
    kind = "f" if name == "mean" else kind_of(src.dtype) if name in ("max", "min") else kind_of(result)
    acc = low.alloca(array_math.reduction_init(low, name, kind).type)

    def line(j):
        """Result element j: its index over the kept axes, then the reduced axis walked in order."""
        offset, rest = i64(0), j
        for d in reversed(range(kept)):
            offset = b.add(offset, b.mul(b.srem(rest, out_shape[d]), strides[d]))
            rest = b.sdiv(rest, out_shape[d])
        b.store(array_math.reduction_init(low, name, kind), acc)

        def step(k):
            ptr = b.bitcast(b.gep(data, [b.add(offset, b.mul(k, stride))]), ELEM[src.dtype].as_pointer())
            x = conversions.cast(low, low.load_element(ptr, src.dtype), kind_of(src.dtype), kind)
            b.store(array_math.reduction_step(low, name, b.load(acc), x, kind, result)[0], acc)

        after = fn.append_basic_block("line_done")
        grid_stride_loop(b, fn, i64(0), i64(1), length, step, after)
        b.position_at_end(after)
        total, total_kind = b.load(acc), kind
        if name == "mean":
            total = sum_reductions.finish_mean(low, total, length, result, array=True)
        ptr = b.bitcast(b.gep(out, [b.mul(j, i64(ELEM_BYTES[result]))]), ELEM[result].as_pointer())
        low.store_element(ptr, total, total_kind, result)

    start = b.zext(b.add(b.mul(special(b, "ctaid.x"), special(b, "ntid.x")), special(b, "tid.x")), I64)
    step = b.zext(b.mul(special(b, "nctaid.x"), special(b, "ntid.x")), I64)
    done = fn.append_basic_block("done")
    grid_stride_loop(b, fn, start, step, n, line, done)
    b.position_at_end(done)
    b.ret_void()
    return kernel
