"""The lowering's constant folding (backend/llvm/runtime/folding.py) gives what LLVM computes: each operation folded in
Python on constants against the same operation compiled and run by LLVM on arguments."""

import ctypes
import itertools

import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import binding as llvm, ir

from scriptc.backend.llvm.runtime.engine import engine
from scriptc.backend.llvm.runtime.folding import FoldingBuilder

WIDTHS = (1, 8, 32, 64)
I64 = ir.IntType(64)
PREDICATES = ("==", "!=", "<", "<=", ">", ">=")
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}
OPS = (
    [(f"icmp_signed{p}", 2) for p in PREDICATES]
    + [(f"icmp_unsigned{p}", 2) for p in PREDICATES]
    + [(op, 2) for op in BINARY]
    + [("not", 1), ("select", 3), ("zext", 1), ("sext", 1), ("trunc", 1)]
)


def _apply(b: ir.IRBuilder, op: str, args: list, width: int):
    """``op`` on ``args`` (of ``width`` bits; select's condition is i1): an i64 result (i1 results zero-extended,
    extensions to 64 bits, truncation from 64 bits of the argument to ``width`` and back signed)."""
    t = ir.IntType(width)
    if op.startswith("icmp_"):
        kind = "icmp_signed" if op.startswith("icmp_signed") else "icmp_unsigned"
        return getattr(b, kind)(op[len(kind) :], *args), ir.IntType(1)
    if op in BINARY:
        return getattr(b, BINARY[op])(*args), t
    if op == "not":
        return b.not_(args[0]), t
    if op == "select":
        return b.select(*args), t
    if op in ("zext", "sext"):
        return getattr(b, op)(args[0], I64), I64
    return b.trunc(args[0], t), t  # trunc: args[0] is i64 here


def _arg_types(op: str, width: int) -> list:
    t = ir.IntType(width)
    if op == "select":
        return [ir.IntType(1), t, t]
    if op == "trunc":
        return [I64]
    return [t] * dict(OPS)[op]


@pytest.fixture(scope="module")
def compiled():
    """Each (op, width) compiled by LLVM: ``i64 f(i64 args...)`` taking each argument's low bits."""
    module = ir.Module("folding")
    names = {}
    for op, _ in OPS:
        for width in WIDTHS:
            if op in ("zext", "sext") and width == 64 or op == "trunc" and width == 64:
                continue
            types = _arg_types(op, width)
            fn = ir.Function(module, ir.FunctionType(I64, [I64] * len(types)), f"f.{op}.{width}")
            b = ir.IRBuilder(fn.append_basic_block())
            args = [a if t == I64 else b.trunc(a, t) for a, t in zip(fn.args, types)]
            result, t = _apply(b, op, args, width)
            b.ret(result if t == I64 else (b.zext(result, I64) if t.width == 1 else b.sext(result, I64)))
            names[op, width] = fn.name
    engine()  # (LLVM initialized)
    mod = llvm.parse_assembly(str(module))
    # a target machine of its own: the JIT owns it, and frees it with itself
    jit = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    jit.finalize_object()
    yield (
        {
            key: ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * len(_arg_types(key[0], key[1])))(
                jit.get_function_address(name)
            )
            for key, name in names.items()
        },
        jit,
    )


def _folded(op: str, width: int, values: list) -> int:
    """The folded constant's value as the compiled function returns it."""
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "unused")
    b = FoldingBuilder(fn.append_basic_block())
    consts = [ir.Constant(t, v) for t, v in zip(_arg_types(op, width), values)]
    result, t = _apply(b, op, consts, width)
    assert isinstance(result, ir.Constant), (op, width, values)
    assert not fn.blocks[0].instructions, "a folded operation emits no instruction"
    mask = (1 << t.width) - 1
    u = int(result.constant) & mask
    if t.width == 1:
        return u
    return u - (1 << t.width) if u >> (t.width - 1) else u


def _value(width: int):
    """An int in a ``width``-bit constant's range, signed or unsigned spelling (both are what ir.Constant takes)."""
    return st.integers(-(1 << (width - 1)), (1 << width) - 1) | st.sampled_from([0, 1, -1, (1 << (width - 1)) - 1])


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([(op, w) for op, _ in OPS for w in WIDTHS if not (op in ("zext", "sext", "trunc") and w == 64)]),
    st.data(),
)
def test_folding_matches_llvm(compiled, case, data):
    op, width = case
    functions, _ = compiled
    types = _arg_types(op, width)
    values = [data.draw(_value(t.width)) for t in types]
    low = [v & ((1 << t.width) - 1) for v, t in zip(values, types)]
    expected = functions[op, width](*[v - (1 << 64) if v >> 63 else v for v in low])
    assert _folded(op, width, values) == expected, (op, width, values)


def test_identities_return_the_operand_without_an_instruction():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, ir.IntType(1)]), "f")
    b = FoldingBuilder(fn.append_basic_block())
    x, c = fn.args
    zero, one, true, false = (
        ir.Constant(I64, 0),
        ir.Constant(I64, 1),
        ir.Constant(ir.IntType(1), 1),
        ir.Constant(ir.IntType(1), 0),
    )
    assert b.add(x, zero) is x and b.add(zero, x) is x and b.sub(x, zero) is x
    assert b.mul(x, one) is x and b.mul(one, x) is x
    assert b.and_(c, true) is c and b.or_(c, false) is c and b.xor(false, c) is c
    assert b.and_(c, false) is false and b.or_(true, c) is true
    assert b.select(c, x, x) is x and b.select(true, x, zero) is x and b.select(false, x, zero) is zero
    assert b.and_(c, c) is c and b.or_(c, c) is c
    for op in PREDICATES:  # x compared with itself: true where the predicate holds for equal operands
        for compare in (b.icmp_signed, b.icmp_unsigned):
            assert compare(op, x, x).constant == (op in ("==", "<=", ">=")), op
    assert not fn.blocks[0].instructions
    assert b.sub(zero, x) is not x and len(fn.blocks[0].instructions) == 1  # 0 - x is not x
    assert b.xor(c, c) is not c


def test_boolean_select_is_logic():
    """A select of booleans is written as and/or (FastISel has no i1 select) and chooses as select does."""
    module = ir.Module("select")
    fn = ir.Function(module, ir.FunctionType(I64, [I64] * 3), "select_bool")
    b = FoldingBuilder(fn.append_basic_block())
    cond, x, y = (b.trunc(a, ir.IntType(1)) for a in fn.args)
    b.ret(b.zext(b.select(cond, x, y), I64))
    assert " select " not in str(module)
    engine()
    jit = llvm.create_mcjit_compiler(
        llvm.parse_assembly(str(module)), llvm.Target.from_default_triple().create_target_machine()
    )
    jit.finalize_object()
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(
        jit.get_function_address("select_bool")
    )
    for c, u, v in itertools.product((0, 1), repeat=3):
        assert f(c, u, v) == (u if c else v), (c, u, v)
