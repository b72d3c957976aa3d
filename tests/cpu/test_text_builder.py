"""TextBuilder (scriptc/backend/llvm/runtime/text_builder.py) writes, for every instruction it builds, the text
llvmlite's IRBuilder prints for the same instruction: the same program built with both gives the same module once local
names are numbered alike, and LLVM parses and verifies it."""

import re

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

from scriptc.backend.llvm.lowering.common import loop_hints, NO_UNROLL
from scriptc.backend.llvm.runtime.text_builder import Register, TextBuilder, module_text

I1, I8, I32, I64, F32, F64 = (
    ir.IntType(1),
    ir.IntType(8),
    ir.IntType(32),
    ir.IntType(64),
    ir.FloatType(),
    ir.DoubleType(),
)
PAIR = ir.LiteralStructType([I64, F64])
V4 = ir.VectorType(F64, 4)


def _program(builder_class, printer=str) -> str:
    """One function using every instruction TextBuilder writes (and a phi and vector ops it leaves to llvmlite,
    taking its registers as operands)."""
    m = ir.Module("m", context=ir.Context())
    callee = ir.Function(m, ir.FunctionType(F64, [F64, I64]), "callee")
    sink = ir.Function(m, ir.FunctionType(ir.VoidType(), [I8.as_pointer()]), "sink")
    variadic = ir.Function(m, ir.FunctionType(I32, [I8.as_pointer()], var_arg=True), "printf")
    fn = ir.Function(m, ir.FunctionType(F64, [I64, F64, PAIR.as_pointer(), V4]), "f")
    n, x, pair, vec = fn.args
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), fn.append_basic_block("done")
    b = builder_class(entry)
    slots = b.alloca(I64, size=ir.Constant(I64, 3), name="slots")
    one = b.alloca(F64, name="one")
    b.store(x, one, align=8)
    ints = [
        b.add(n, n, name="a"),
        b.sub(n, n, flags=("nsw",)),
        b.mul(n, n),
        b.sdiv(n, n),
        b.udiv(n, n),
        b.srem(n, n),
        b.urem(n, n),
        b.and_(n, n),
        b.or_(n, n),
        b.xor(n, n),
        b.shl(n, n),
        b.lshr(n, n),
        b.ashr(n, n),
        b.not_(n),
        b.neg(n),
    ]
    floats = [b.fadd(x, x), b.fsub(x, x), b.fmul(x, x, flags=("fast",)), b.fdiv(x, x), b.frem(x, x), b.fneg(x)]
    compares = (
        [b.icmp_signed(op, n, ints[0]) for op in ("==", "!=", "<", "<=", ">", ">=")]
        + [b.icmp_unsigned(op, n, ints[1]) for op in ("<", ">=")]
        + [b.fcmp_ordered(op, x, floats[0]) for op in ("==", "<", "uno")]
        + [b.fcmp_unordered(op, x, floats[1], flags=("nnan",)) for op in ("!=", ">=", "ord")]
        + [b.fcmp_ordered("<", vec, vec)]
    )
    picked = b.select(compares[0], ints[2], ints[3], name="pick")
    casts = [
        b.trunc(n, I32),
        b.zext(compares[1], I64),
        b.sext(compares[2], I64),
        b.fptrunc(x, F32),
        b.fpext(b.fptrunc(x, F32), F64),
        b.fptosi(x, I64),
        b.fptoui(x, I64),
        b.sitofp(n, F64),
        b.uitofp(n, F64),
        b.ptrtoint(one, I64),
        b.inttoptr(n, I8.as_pointer()),
        b.bitcast(one, I8.as_pointer()),
        b.zext(n, I64),
    ]  # same type: no instruction
    field = b.gep(pair, [ir.Constant(I32, 0), ir.Constant(I32, 1)], inbounds=True, name="field")
    b.store(b.load(field, align=8), field)
    b.store(picked, b.gep(slots, [ints[4]]))
    loaded = b.load(pair)
    b.insert_value(loaded, floats[2], 1)
    b.extract_value(loaded, [0])
    b.call(sink, [casts[10]])
    b.call(variadic, [casts[11], n], tail=True)
    called = b.call(callee, [x, n], name="r")
    b.extract_element(vec, ir.Constant(I32, 2))
    with b.if_then(compares[3], likely=False):
        b.call(sink, [casts[11]])
    before = b.block
    b.cbranch(compares[4], loop, done)
    b.position_at_end(loop)
    phi = b.phi(F64, name="acc")
    phi.add_incoming(called, before)
    step = b.fadd(phi, floats[3])
    phi.add_incoming(step, loop)
    back = b.cbranch(b.fcmp_ordered("<", step, x), loop, done)
    loop_hints(m, back, NO_UNROLL)
    b.position_at_end(done)
    b.ret(x)
    fn2 = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "g")
    b = builder_class(fn2.append_basic_block())
    b.position_at_end(fn2.blocks[0])
    with b.goto_block(fn2.blocks[0]):
        b.alloca(I8, name='q"uote\\d')
    b.ret_void()
    fn3 = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "h")
    builder_class(fn3.append_basic_block()).unreachable()
    ir.Function(m, ir.FunctionType(I64, [I64]), "declared")
    ir.GlobalVariable(m, I64, "counter")
    named = m.context.get_identified_type("named")
    named.set_body(I64, F64)
    ir.GlobalVariable(m, named, "holder")
    return printer(m)


def _numbered(text: str) -> str:
    """Local names replaced by their order of appearance in each function (llvmlite's and TextBuilder's differ),
    blocks' labels too."""
    out = []
    text = re.sub(r'^("(?:[^"\\]|\\.)*"|[-a-zA-Z$._][-a-zA-Z$._0-9]*):$', r"%\1:", text, flags=re.M)
    for part in re.split(r"(?=^define )", text, flags=re.M):
        names: dict = {}
        out.append(
            re.sub(
                r'%"(?:[^"\\]|\\.)*"|%[-a-zA-Z$._][-a-zA-Z$._0-9]*|%\d+',
                lambda m: names.setdefault(m.group(0).replace('"', ""), f"%v{len(names)}"),
                part,
            )
        )
    return "".join(out)


def test_same_text_as_llvmlite():
    ours, theirs = _program(TextBuilder), _program(ir.IRBuilder)
    assert ours.count("\n") > 100 and ':1"' in ours
    assert _numbered(ours).replace("select  ", "select ") == _numbered(theirs).replace("select  ", "select ")


def test_module_text_is_str():
    assert _program(TextBuilder, module_text) == _program(TextBuilder)
    assert _program(ir.IRBuilder, module_text) == _program(ir.IRBuilder)


def test_llvm_verifies_it():
    llvm.parse_assembly(_program(TextBuilder)).verify()


def test_registers_are_text():
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(I64, [I64]), "f")
    b = TextBuilder(fn.append_basic_block())
    r = b.add(fn.args[0], ir.Constant(I64, 1), name="sum")
    assert isinstance(r, Register) and (r.opname, r.type) == ("add", I64) and r.operands[0] is fn.args[0]
    assert str(r) == '%"sum:1" = add i64 %".1", 1' and r.get_reference() == '%"sum:1"'
    assert b.add(r, r, name="sum").get_reference() == '%"sum:2"'  # numbered per function: never a clash
    slot = b.alloca(I64, size=ir.Constant(I64, 0))
    slot.set_count(7)
    assert str(slot).endswith("alloca i64, i64 7")


@pytest.mark.parametrize(
    "build, error",
    [
        (lambda b, a: b.add(a, ir.Constant(I32, 1)), ValueError),
        (lambda b, a: b.store(ir.Constant(I32, 1), b.alloca(I64)), TypeError),
        (lambda b, a: b.load(a), TypeError),
        (lambda b, a: b.insert_value(ir.Constant(PAIR, None), a, 1), TypeError),
    ],
)
def test_type_errors_as_llvmlite(build, error):
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(I64, [I64]), "f")
    for builder_class in (TextBuilder, ir.IRBuilder):
        with pytest.raises(error):
            build(builder_class(fn.append_basic_block()), fn.args[0])
