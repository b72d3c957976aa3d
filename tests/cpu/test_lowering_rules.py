"""Every operator has a lowering rule for every target, or a stated reason why it has none.

- CPU: each registered operator has a rule (``rules.lowers``/``lowers_array``), or ``UNSUPPORTED_DETAIL`` says
  why not (the message a user sees).
- Elements: for each element-wise operator and each dtype NumPy runs a loop for (its type rule accepts the
  operands), the element rule of the loop's kind exists (elements.py). A dtype NumPy refuses (``np.sin`` of an
  int computes in float64, ``~`` of a float is a TypeError) needs no rule: the type rule is the stated reason.
- NVPTX: the same element rules lowered into one kernel module per dtype assemble to PTX with every math call
  resolved in libdevice (the names come from ``ops.mathfns.C_MATH``, the one table of C math functions).
"""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

import scriptc
import scriptc.ops  # noqa: F401  (registers the operators)
from scriptc.backend.llvm.lowering import lower  # noqa: F401  (registers the lowering rules)
from scriptc.backend.llvm.lowering.common import F64, I1, I64, UNSUPPORTED_DETAIL
from scriptc.backend.llvm.lowering.elements import COMPARE, PREDICATES, element, has_rule
from scriptc.backend.llvm.lowering.arrays import kind_of
from scriptc.backend.llvm.lowering.lower import FunctionLowering, ModuleLowering
from scriptc.backend.llvm.lowering.rules import ARRAY_RULES, SCALAR_RULES, rule_for
from scriptc.backend.nvptx.ptx import NVPTX, compile_ptx, libdevice_path
from scriptc.ir.parser import parse
from scriptc.ir.registry import REGISTRY, OpTypeError
from scriptc.ir.types import TensorType, result_dtype
from scriptc.ops.mathfns import C_MATH

DTYPES = ["float64", "float32", "float16", "int64", "int32", "uint8", "bool"]
REGISTER = {"f": F64, "i": I64, "u": I64, "b": I1}


def loops(dtype: str):
    """(operator, loop kind, operand kinds) of each element-wise operator NumPy runs on arrays of ``dtype``."""
    t = TensorType.of(dtype, 1)
    for name, op in sorted(REGISTRY.items()):
        if not op.elementwise:
            continue
        types = [TensorType.of("bool", 1) if p == "condition" else t for p in op.params]
        try:
            out = op.infer(*types)
        except OpTypeError:
            continue  # NumPy refuses these operands: no loop
        short = name.split("::")[1]
        loop = result_dtype(*types) if short in COMPARE or short in PREDICATES else out.dtype
        yield (
            short,
            kind_of(loop),
            [kind_of(x.dtype) if p == "condition" else kind_of(loop) for x, p in zip(types, op.params)],
            loop,
        )


def test_every_operator_has_a_cpu_rule_or_a_reason():
    missing = [
        name
        for name in REGISTRY
        if name not in SCALAR_RULES and name not in ARRAY_RULES and name not in UNSUPPORTED_DETAIL
    ]
    assert missing == []


def test_rule_for_finds_rules_by_operator():
    g = parse("""graph(%x : float, %a : Double(3)):
  %y : float = aten::sin(%x)
  %b : Double(3) = aten::sin(%a)
  return (%y)""")
    scalar, array = g.block.nodes
    assert rule_for(scalar) is SCALAR_RULES["aten::sin"]
    assert rule_for(array) is ARRAY_RULES["aten::sin"]
    assert SCALAR_RULES["aten::sin"] is not ARRAY_RULES["aten::sin"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_numpy_loop_has_an_element_rule(dtype):
    found = list(loops(dtype))
    assert len(found) > 20
    missing = [(op, k) for op, k, _, _ in found if not has_rule(op, k)]
    assert missing == []


def kernel_module(dtype: str) -> ModuleLowering:
    """One NVPTX module holding, for each element-wise operator NumPy runs on ``dtype``, a function computing one
    element through its element rule."""
    mod = ModuleLowering(f"rules_{dtype}", target=NVPTX)
    for op, k, kinds, loop in loops(dtype):
        out_kind = "b" if op in COMPARE or op in PREDICATES else k
        params = [REGISTER[x] for x in kinds] + [REGISTER[out_kind].as_pointer()]
        fn = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), params), f"{op}_{dtype}")
        low = FunctionLowering.into(mod, fn, None, nogil=True)
        kind, x = element(low, op, list(fn.args[:-1]), k, loop)
        assert kind == out_kind, (op, kind)
        low.b.store(x, fn.args[-1])
        low.b.ret_void()
        if low._unwind_bb is not None:  # a raising element (an integer to a negative power): as kernels do
            low.b.position_at_end(low._unwind_bb)
            low.b.ret_void()
    return mod


@pytest.mark.skipif(libdevice_path() is None, reason="libdevice is not installed (pip install nvidia-nvvm)")
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_nvptx_lowers_every_element_rule(dtype):
    ptx = compile_ptx(str(kernel_module(dtype).module))
    assert ".extern .func" not in ptx  # every call resolved: libdevice linked in, no libm left
    for op, k, _, _ in loops(dtype):
        assert f"{op}_{dtype}" in ptx


def test_the_math_table_names_libdevice_functions():
    """Each C math function of the table exists in libdevice, in double and single precision."""
    path = libdevice_path()
    if path is None:
        pytest.skip("libdevice is not installed (pip install nvidia-nvvm)")
    import llvmlite.binding as llvm

    names = {f.name for f in llvm.parse_bitcode(path.read_bytes()).functions}
    missing = [
        f"{NVPTX.math_symbol(c.name)}{suffix}"
        for c in C_MATH.values()
        for suffix in ("", "f")
        if f"{NVPTX.math_symbol(c.name)}{suffix}" not in names
    ]
    assert missing == []
    assert np.all([NVPTX.math_symbol(c.name).startswith("__nv_") for c in C_MATH.values()])


@scriptc.script
def int_fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
def test_fmod_of_integers_is_numpys(dtype):
    """Found by the element-rule check above: np.fmod of integer arrays had no integer rule."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    a = rng.integers(info.min, info.max, 200, endpoint=True, dtype=dtype)
    b = rng.integers(info.min, info.max, 200, endpoint=True, dtype=dtype)
    b[:20] = 0
    if info.min < 0:
        a[20:30], b[20:30] = info.min, -1
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    got = int_fmod(a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(int_fmod.interpret(a, b), want)


def test_the_lowering_core_knows_no_operator():
    """``FunctionLowering`` is the core: values and blocks, the error path, interrupt checks, outlined calls, and
    memory, element access and loops. What an operator family needs is module functions of its domain beside its
    rules: no base class of the core is a domain's, no method is named after an operator, and the core stays small
    (a new helper goes to its domain's module)."""
    core = [k for k in FunctionLowering.__mro__ if k is not object]
    assert [k.__name__ for k in core] == ["FunctionLowering", "Unwinding", "InterruptChecks", "ArrayOps", "Outlining"]
    methods = {m for k in core for m, v in vars(k).items() if callable(v)}
    operators = {name.split("::")[1] for name in REGISTRY}
    assert methods & operators == set()
    assert len(methods) <= 105, sorted(methods)
    overridden = [m for m in methods if sum(m in vars(k) for k in core) > 1]
    assert overridden == [], "a method defined in two parts of the core: the order of the bases would matter"
