"""Matrix products (``a @ b``, ``np.matmul``, ``np.dot``) of device arrays as a tiled GPU kernel.

Every product is a set of core products C (m x n) = A (m x k) @ B (k x n), one per batch index, as in the CPU
lowering (llvm/matmul.py): a 1-d operand is a row (left) or a column (right) of length k; ``np.matmul``
broadcasts the batch dimensions, ``np.dot`` pairs every leading index of ``a`` with every leading index of ``b``.
The host works out the cores' sizes and byte strides, the batch dimensions, and NumPy's errors:

    void matmul(i8* out, i8* a, i8* b, i64 m, i64 n, i64 k, i64 a_sm, i64 a_sk, i64 b_sk, i64 b_sn,
                i64 c_sm, i64 c_sn, i64 rows, i64 cols, i64 depth, i64 tiles_m, i64 tiles_n, i64 jobs,
                <per batch dimension: i64 extent, i64 a_stride, i64 b_stride, i64 c_stride>)

A job is one tile of ``rows x cols`` outputs of one batch index; each block takes jobs in a grid-stride loop.
For each step of ``depth`` along k the block's threads load the A tile (rows x depth) and the B tile (depth x
cols) into shared memory together (neighbouring threads read neighbouring elements along k of A and along n of
B), wait at a barrier, and thread t < rows * cols adds the products of its output (row t / cols, column
t % cols); a second barrier frees the tiles. One output per thread: the host picks the tile from the block
size (square-ish, one row for m == 1, one column for n == 1), so any block size works.

Sums run in order along k in the dtype NumPy accumulates in: double for float64, float for float32 (sgemm) and
float16 (NumPy's half loop), wrapping 64-bit integers for integer results (narrowed when stored, which is what
NumPy's narrower sums give) and bool as "any of and". Operands are converted to that dtype as they are loaded
(NumPy casts them to the result dtype first). BLAS adds in another order, so float results agree with NumPy
within rounding.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ...ir.types import BOOL, FLOAT, NumpyScalarType, TensorType, result_dtype
from ..llvm.lowering.array_value import ELEM, kind_of
from ..llvm.lowering.common import F64, I8P, I64, i64
from ..llvm.lowering.lower import FunctionLowering
from .params import PARAM_CTYPE
from .groups import GpuUnsupported
from .device import DeviceArray, launch_config
from .intrinsics import barrier, grid_stride_loop, i32, special
from ..llvm.lowering import conversions

TILE_SLOTS = 2048  # 64-bit shared slots per tile (16 KiB): rows * depth and depth * cols fit
MAX_DEPTH = 32
CORE = [
    "m",
    "n",
    "k",
    "a_sm",
    "a_sk",
    "b_sk",
    "b_sn",
    "c_sm",
    "c_sn",
    "rows",
    "cols",
    "depth",
    "tiles_m",
    "tiles_n",
    "jobs",
]


def batch_rank(product) -> int:
    ra, rb = (v.type.rank for v in product.inputs)
    if product.kind == "aten::matmul":
        return max(ra - 2, rb - 2, 0)
    return max(ra - 2, 0) + max(rb - 2, 0)


def result_of(product) -> str:
    t = product.output.type
    return t.dtype if isinstance(t, TensorType) else result_dtype(*(v.type for v in product.inputs))


def accumulator(res: str) -> ir.Type:
    """The register NumPy's product accumulates in for a result of ``res``."""
    if res == "float64":
        return F64
    if res in ("float32", "float16"):
        return ir.FloatType()
    return I64


def add_matrix_product(km, kernel):
    """Fill in ``kernel`` (a group of one matrix product): its parameters and its code in ``km``'s module."""
    product = kernel.product
    node = kernel.node
    sub = node.attrs["subgraph"]
    res = result_of(product)
    if "float16" in (res, *(v.type.dtype for v in product.inputs)):
        raise GpuUnsupported(f"float16 matrix products{_where(node)} do not run on the GPU yet")
    nb = batch_rank(product)
    params = [I8P] * 3 + [I64] * (len(CORE) + 4 * nb)
    kernel.params = [PARAM_CTYPE[str(t)] for t in params]
    kernel.arrays = [sub.inputs.index(v) for v in product.inputs]  # a @ a: the same operand twice
    fn = km._kernel_function(kernel.name, params)
    low = FunctionLowering.into(km.mod, fn, node, nogil=True)
    b = low.b
    out, a_data, b_data = fn.args[:3]
    size = dict(zip(CORE, fn.args[3 : 3 + len(CORE)]))
    dims = fn.args[3 + len(CORE) :]
    batch = [dims[4 * d : 4 * d + 4] for d in range(nb)]
    acc_type = accumulator(res)
    kind = "f" if isinstance(acc_type, (ir.DoubleType, ir.FloatType)) else "i"

    def tile(name):
        """A shared tile as a generic pointer to accumulator-typed elements."""
        slots = km.shared_slots(name, TILE_SLOTS)
        first = b.addrspacecast(b.gep(slots, [i32(0), i32(0)], inbounds=True), I64.as_pointer())
        return b.bitcast(first, acc_type.as_pointer())

    a_tile, b_tile = tile("a_tile"), tile("b_tile")
    tid = b.zext(special(b, "tid.x"), I64)
    threads = b.zext(special(b, "ntid.x"), I64)
    rows, cols, depth, k = size["rows"], size["cols"], size["depth"], size["k"]
    mine = b.icmp_unsigned("<", tid, b.mul(rows, cols))  # a thread with an output in the tile
    r, c = b.udiv(tid, cols), b.urem(tid, cols)
    acc = low.alloca(acc_type)

    def operand(data, offset, dtype):
        """An element converted to the accumulator's type (NumPy's cast to the result dtype)."""
        x = low.load_element(b.bitcast(b.gep(data, [offset]), ELEM[dtype].as_pointer()), dtype)
        x = conversions.cast(low, x, kind_of(dtype), kind)
        return b.fptrunc(x, acc_type) if isinstance(acc_type, ir.FloatType) else x

    def job(j):
        tn = b.urem(j, size["tiles_n"])
        rest = b.udiv(j, size["tiles_n"])
        tm = b.urem(rest, size["tiles_m"])
        rest = b.udiv(rest, size["tiles_m"])
        offsets = [i64(0)] * 3
        for extent, *strides in reversed(batch):
            index = b.urem(rest, extent)
            rest = b.udiv(rest, extent)
            offsets = [b.add(o, b.mul(index, s)) for o, s in zip(offsets, strides)]
        a_at, b_at, c_at = offsets
        i0, j0 = b.mul(tm, rows), b.mul(tn, cols)
        b.store(ir.Constant(acc_type, 0.0 if kind == "f" else 0), acc)

        def step(p0):
            width = b.select(b.icmp_signed("<", b.sub(k, p0), depth), b.sub(k, p0), depth)

            def load_a(e):
                i, p = b.add(i0, b.udiv(e, depth)), b.urem(e, depth)
                with b.if_then(b.and_(b.icmp_signed("<", i, size["m"]), b.icmp_signed("<", p, width))):
                    offset = b.add(a_at, b.add(b.mul(i, size["a_sm"]), b.mul(b.add(p0, p), size["a_sk"])))
                    b.store(operand(a_data, offset, product.inputs[0].type.dtype), b.gep(a_tile, [e]))

            def load_b(e):
                p, jj = b.udiv(e, cols), b.add(j0, b.urem(e, cols))
                with b.if_then(b.and_(b.icmp_signed("<", jj, size["n"]), b.icmp_signed("<", p, width))):
                    offset = b.add(b_at, b.add(b.mul(b.add(p0, p), size["b_sk"]), b.mul(jj, size["b_sn"])))
                    b.store(operand(b_data, offset, product.inputs[1].type.dtype), b.gep(b_tile, [e]))

            _loop(b, fn, tid, threads, b.mul(rows, depth), load_a)
            _loop(b, fn, tid, threads, b.mul(depth, cols), load_b)
            barrier(b)
            with b.if_then(mine):

                def multiply_add(p):
                    x = b.load(b.gep(a_tile, [b.add(b.mul(r, depth), p)]))
                    y = b.load(b.gep(b_tile, [b.add(b.mul(p, cols), c)]))
                    total = b.load(acc)
                    b.store(b.fadd(total, b.fmul(x, y)) if kind == "f" else b.add(total, b.mul(x, y)), acc)

                _loop(b, fn, i64(0), i64(1), width, multiply_add)
            barrier(b)  # the tiles are read: the next step may overwrite them

        _loop(b, fn, i64(0), depth, k, step)
        i, jj = b.add(i0, r), b.add(j0, c)
        inside = b.and_(mine, b.and_(b.icmp_signed("<", i, size["m"]), b.icmp_signed("<", jj, size["n"])))
        with b.if_then(inside):
            ptr = b.gep(out, [b.add(c_at, b.add(b.mul(i, size["c_sm"]), b.mul(jj, size["c_sn"])))])
            value = b.load(acc)
            if isinstance(acc_type, ir.FloatType):
                value = b.fpext(value, F64)  # exact: the one rounding to float32 happened in the sums
            low.store_element(b.bitcast(ptr, ELEM[res].as_pointer()), value, kind, res)

    start = b.zext(special(b, "ctaid.x"), I64)
    _loop(b, fn, start, b.zext(special(b, "nctaid.x"), I64), size["jobs"], job)
    b.ret_void()
    return kernel


def _loop(b, fn, start, step, stop, body) -> None:
    """for (i = start; i < stop; i += step) body(i), continuing after it."""
    after = fn.append_basic_block("after")
    grid_stride_loop(b, fn, start, step, stop, body, after)
    b.position_at_end(after)


def _where(node) -> str:
    return f" at {node.source.short()}" if node.source is not None else ""


# -- the host side -----------------------------------------------------------------------------------------


def tile_shape(m: int, n: int, threads: int, slots: int = TILE_SLOTS) -> tuple[int, int, int]:
    """(rows, cols, depth) of a block's tile: one output per thread, a single row or column for vector
    products, and a k step whose tiles fit the shared arrays."""
    if n == 1 and m > 1:
        rows, cols = threads, 1
    elif m == 1:
        rows, cols = 1, threads
    else:
        cols = max(1, math.isqrt(threads))
        rows = threads // cols
    return rows, cols, max(1, min(MAX_DEPTH, slots // max(rows, cols)))


def product_layout(kind: str, a, b):
    """(out shape, core sizes and byte strides, batch dimensions [(extent, a, b, out dimension)]) of a product
    of arrays shaped like ``a`` and ``b``, or NumPy's ValueError (raised by NumPy itself, on zero-strided
    stand-ins: the check happens before any arithmetic)."""
    ra, rb = a.ndim, b.ndim
    k = a.shape[-1]
    ok = k == (b.shape[-2] if rb >= 2 else b.shape[0])
    if kind == "aten::matmul":
        try:
            batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            ok = False
    if not ok:
        impl = np.matmul if kind == "aten::matmul" else np.dot
        impl(*(np.broadcast_to(np.zeros((), x.dtype), x.shape) for x in (a, b)))
        raise ValueError(f"{kind}: shapes {a.shape} and {b.shape} do not match")
    m = a.shape[-2] if ra >= 2 else 1
    n = b.shape[-1] if rb >= 2 else 1
    if kind == "aten::matmul":
        nb = len(batch_shape)

        def stride(x, d):
            j = d - nb + max(x.ndim - 2, 0)
            return x.strides[j] if j >= 0 and x.shape[j] != 1 else 0

        batch = [(batch_shape[d], stride(a, d), stride(b, d), d) for d in range(nb)]
        shape = batch_shape + ((m,) if ra >= 2 else ()) + ((n,) if rb >= 2 else ())
        m_dim = nb if ra >= 2 else None
    else:
        batch = [(a.shape[d], a.strides[d], 0, d) for d in range(ra - 2)]
        batch += [(b.shape[d], 0, b.strides[d], ra - 1 + d) for d in range(rb - 2)]
        shape = a.shape[:-1] + (b.shape[:-2] + b.shape[-1:] if rb >= 2 else ())
        m_dim = ra - 2 if ra >= 2 else None
    n_dim = len(shape) - 1 if rb >= 2 else None
    core = {
        "m": m,
        "n": n,
        "k": k,
        "a_sm": a.strides[-2] if ra >= 2 else 0,
        "a_sk": a.strides[-1],
        "b_sk": b.strides[-2] if rb >= 2 else b.strides[0],
        "b_sn": b.strides[-1] if rb >= 2 else 0,
    }
    return tuple(shape), core, batch, m_dim, n_dim


def launch_product(program, kernel, node, inputs):
    """The product of two device arrays: a new device array, or (1-d by 1-d) a scalar copied to the host."""
    product = kernel.product
    a, b = (inputs[k] for k in kernel.arrays)
    device = program.device
    shape, core, batch, m_dim, n_dim = product_layout(product.kind, a, b)
    res = result_of(product)
    scalar = not isinstance(node.output.type, TensorType)
    out = DeviceArray._make(device, shape, res)
    if out.size == 0:
        return out
    c_sm = out.strides[m_dim] if m_dim is not None else 0
    c_sn = out.strides[n_dim] if n_dim is not None else 0
    threads, max_blocks = launch_config()
    rows, cols, depth = tile_shape(core["m"], core["n"], threads)
    tiles_m, tiles_n = -(-core["m"] // rows), -(-core["n"] // cols)
    jobs = tiles_m * tiles_n * int(np.prod([extent for extent, *_ in batch], dtype=np.int64))
    dims = [x for extent, sa, sb, d in batch for x in (extent, sa, sb, out.strides[d])]
    args = [
        out.pointer,
        a.pointer,
        b.pointer,
        core["m"],
        core["n"],
        core["k"],
        core["a_sm"],
        core["a_sk"],
        core["b_sk"],
        core["b_sn"],
        c_sm,
        c_sn,
        rows,
        cols,
        depth,
        tiles_m,
        tiles_n,
        jobs,
        *dims,
    ]
    device.launch(program.module, kernel, device.blocks(jobs * threads, threads, max_blocks), threads, args)
    if not scalar:
        return out
    host = np.empty((), res)
    device.copy_to_host(host, out.pointer)  # the one element, synchronously
    t = node.output.type
    if isinstance(t, NumpyScalarType):
        return host[()]  # (np.dot of float32 vectors is an np.float32)
    return float(host) if t == FLOAT else bool(host) if t == BOOL else int(host)
