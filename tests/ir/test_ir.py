"""The IR layer on its own: types, hand-built graphs, printer/parser symmetry, verifier, use lists."""

import math

import pytest

from scriptc.ir import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    Graph,
    Node,
    TensorType,
    TupleType,
    VerifyError,
    parse,
    print_graph,
    verify,
)
from scriptc.ir.types import join, parse_type
from tests.util import filecheck


@pytest.mark.parametrize(
    "t, text",
    [
        (INT, "int"),
        (FLOAT, "float"),
        (BOOL, "bool"),
        (STR, "str"),
        (NONE, "NoneType"),
        (TENSOR, "Tensor"),
        (TensorType("float64", 2), "Double(*, *)"),
        (TensorType("float32", None, (2, 3)), "Float(2, 3)"),
        (TensorType("int64", None, (None, 3)), "Long(*, 3)"),
        (TensorType("bool", 0), "Bool()"),
        (TensorType("int32"), "Int(...)"),
        (TupleType((INT, TupleType((FLOAT, TENSOR)))), "(int, (float, Tensor))"),
    ],
)
def test_type_text_round_trip(t, text):
    assert str(t) == text
    assert parse_type(text) == t


def test_join_follows_pythons_numeric_tower():
    assert join(INT, FLOAT) == FLOAT
    assert join(INT, TENSOR) is None
    assert join(TensorType("float64", None, (2, 3)), TensorType("float64", None, (2, 4))) == TensorType(
        "float64", None, (2, None)
    )
    assert join(TensorType("float64", 1), TensorType("float32", 1)) is None


def build_loop_graph() -> Graph:
    """graph(%x : Double(*), %n : int): loop n times doubling x, printing it."""
    g = Graph("f")
    x = g.add_input(TensorType("float64", 1), "x")
    n = g.add_input(INT, "n")
    true = g.block.append(Node("prim::Constant", [], [(BOOL, None)], {"value": True})).output
    loop = g.block.append(Node("prim::Loop", [n, true, x], [(TensorType("float64", 1), "x")]))
    body = loop.add_block()
    body.add_param(INT, "i")
    xc = body.add_param(TensorType("float64", 1), "x")
    two = body.append(Node("prim::Constant", [], [(FLOAT, None)], {"value": 2.0})).output
    y = body.append(Node("aten::mul", [xc, two], [(TensorType("float64", 1), "x")])).output
    body.append(Node("prim::Print", [y], [], {"sep": ", ", "end": "!\n"}))
    body.add_return(true)
    body.add_return(y)
    g.block.add_return(loop.output)
    return g


def test_printer_writes_torchscript_text():
    text = print_graph(verify(build_loop_graph()))
    filecheck(
        text,
        """
CHECK: graph(%x : Double(*),
CHECK-NEXT:       %n : int):
CHECK-NEXT:   %0 : bool = prim::Constant[value=1]()
CHECK-NEXT:   %x.1 : Double(*) = prim::Loop(%n, %0, %x)
CHECK-NEXT:     block0(%i : int, %x.2 : Double(*)):
CHECK-NEXT:       %1 : float = prim::Constant[value=2.0]()
CHECK-NEXT:       %x.3 : Double(*) = aten::mul(%x.2, %1)
CHECK-NEXT:        = prim::Print[sep=", ", end="!\\n"](%x.3)
CHECK-NEXT:       -> (%0, %x.3)
CHECK-NEXT:   return (%x.1)
""",
    )


def test_parse_print_is_identity():
    text = print_graph(build_loop_graph())
    g = verify(parse(text))
    assert print_graph(g) == text
    assert [v.type for v in g.inputs] == [TensorType("float64", 1), INT]


def test_parser_reads_attributes_constants_and_subgraphs():
    text = """graph(%a : float):
  %0 : float = prim::Constant[value=inf]()
  %1 : float = prim::Constant[value=-1e+16]()
  %2 : str = prim::Constant[value="say \\"hi\\"\\n"]()
  %3 : NoneType = prim::Constant()
  %4 : bool = prim::Constant[value=0]()
  %5 : float = prim::CallFunction[fn=helper](%a)  # k.py:3:9
  return (%5)
with helper = graph(%b : float):
  return (%b)
"""
    g = verify(parse(text))
    assert print_graph(g) == text
    consts = [n.attrs.get("value") for n in g.nodes if n.kind == "prim::Constant"]
    assert consts[0] == math.inf and consts[1] == -1e16 and consts[2] == 'say "hi"\n' and consts[4] is False
    call = g.nodes[-1]
    assert call.attrs["fn"].name == "helper" and call.source.line == 3 and call.source.col == 9


def test_replace_all_uses_with_moves_every_use():
    g = build_loop_graph()
    x, n = g.inputs
    assert len(x.uses) == 1
    x.replace_all_uses_with(g.add_input(TensorType("float64", 1), "y"))
    assert not x.uses and g.nodes[1].inputs[2].name == "y"
    verify(g)


def test_verifier_rejects_use_before_definition():
    g = build_loop_graph()
    g.block.nodes.reverse()  # the loop now precedes the constant it uses
    with pytest.raises(VerifyError, match="does not dominate"):
        verify(g)


def test_verifier_rejects_loop_block_signature():
    g = build_loop_graph()
    body = g.nodes[1].blocks[0]
    body.params[1].type = TensorType("float32", 1)
    with pytest.raises(VerifyError, match="block parameters"):
        verify(g)


def test_verifier_checks_types_against_the_operator_rule():
    g = Graph("f")
    a = g.add_input(INT, "a")
    bad = g.block.append(Node("aten::div", [a, a], [(INT, None)]))  # int / int is a float
    g.block.add_return(bad.output)
    with pytest.raises(VerifyError, match=r"outputs typed \(int\), rule gives \(float\)"):
        verify(g)


def test_verifier_rejects_unknown_operator_and_bad_if():
    g = Graph("f")
    a = g.add_input(INT, "a")
    g.block.append(Node("aten::frobnicate", [a], []))
    with pytest.raises(VerifyError, match="unknown operator"):
        verify(g)
    g = Graph("f")
    a = g.add_input(INT, "a")
    node = g.block.append(Node("prim::If", [a], [(INT, None)]))
    node.add_block()
    node.add_block()
    with pytest.raises(VerifyError, match="one bool input"):
        verify(g)


def test_names_are_unique_and_stable():
    g = Graph("f")
    assert [g.fresh_name("x") for _ in range(3)] == ["x", "x.1", "x.2"]
    assert [g.fresh_name() for _ in range(2)] == ["0", "1"]
    assert g.fresh_name("x.1") == "x.3"


def test_anonymous_printing_numbers_values_and_subgraphs():
    # the outlined-function key (backend/llvm/lowering/outline.py): graphs equal but for names print alike
    def text(x, y, helper):
        return f"""graph(%{x} : float,
      %{y} : float):
  %s.{x} : float = aten::mul(%{x}, %{y})
  %t : float = prim::CallFunction[fn={helper}](%s.{x})
  return (%t)
with {helper} = graph(%{y} : float):
  return (%{y})
"""

    a, b = parse(text("a", "b", "f")), parse(text("p", "q", "g"))
    assert print_graph(a, anonymous=True) == print_graph(b, anonymous=True)
    assert print_graph(a) != print_graph(b)
    swapped = parse(text("a", "b", "f").replace("aten::mul(%a, %b)", "aten::mul(%b, %a)"))
    assert print_graph(swapped, anonymous=True) != print_graph(a, anonymous=True)
    assert "%1 : float" in print_graph(a, anonymous=True) and "with graph.0 = graph(" in print_graph(a, anonymous=True)
