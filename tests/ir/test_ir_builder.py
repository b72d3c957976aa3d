"""scriptc/ir/builder.py: where ``Builder`` inserts (end, before, after, an index; nested blocks; the ``with``),
what it names and types, checked on printed graphs; and that outside scriptc/ir/ nodes are made with it only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import scriptc.ops  # noqa: F401  (declares the operators whose rules type ``op`` without ``types``)
from scriptc.ir import BOOL, INT, NONE, Graph, SourceRange, print_graph
from scriptc.ir.builder import Builder

ROOT = Path(__file__).resolve().parents[2] / "scriptc"


def graph_with_x():
    g = Graph("f")
    return g, g.add_input(INT, "x")


def text(g: Graph) -> str:
    return print_graph(g, sources=False)


def test_at_end_names_from_hints_and_infers_types():
    g, x = graph_with_x()
    b = Builder.at_end(g.block)
    one = b.constant(1)
    s = b.op("aten::add", [x, one], hints="s")  # int + int: the operator's rule says int
    lt = b.op("aten::lt", [s.output, one])
    g.block.add_return(b.op("prim::TupleConstruct", [s.output, lt.output], None).output)
    assert text(g) == (
        "graph(%x : int):\n"
        "  %0 : int = prim::Constant[value=1]()\n"
        "  %s : int = aten::add(%x, %0)\n"
        "  %1 : bool = aten::lt(%s, %0)\n"
        "  %2 : (int, bool) = prim::TupleConstruct(%s, %1)\n"
        "  return (%2)\n"
    )


def test_before_keeps_a_run_of_nodes_in_order_ahead_of_the_anchor():
    g, x = graph_with_x()
    end = Builder.at_end(g.block)
    last = end.op("aten::neg", [x], hints="last")
    before = Builder.before(last)
    a = before.op("aten::mul", [x, x], hints="a")
    before.op("aten::add", [a.output, x], hints="b")
    end.op("aten::sub", [x, x], hints="tail")  # the other builder still appends at the end
    g.block.add_return(last.output)
    assert [n.kind for n in g.nodes] == ["aten::mul", "aten::add", "aten::neg", "aten::sub"]
    assert "  %a : int = aten::mul(%x, %x)\n  %b : int = aten::add(%a, %x)\n  %last" in text(g)


def test_after_and_at_index():
    g, x = graph_with_x()
    b = Builder.at_end(g.block)
    first = b.op("aten::neg", [x], hints="first")
    b.op("aten::abs", [x], hints="second")
    after = Builder.after(first)
    after.op("aten::mul", [x, x], hints="m1")
    after.op("aten::mul", [x, x], hints="m2")
    Builder.at_index(g.block, 0).constant(7)
    Builder.at_index(g.block, len(g.nodes)).constant(None)  # past the last node: the end
    Builder.after(g.nodes[-1]).constant(True)  # after the last node: the end too
    assert [(n.kind, n.outputs[0].name) for n in g.nodes] == [
        ("prim::Constant", "0"),
        ("aten::neg", "first"),
        ("aten::mul", "m1"),
        ("aten::mul", "m2"),
        ("aten::abs", "second"),
        ("prim::Constant", "1"),
        ("prim::Constant", "2"),
    ]
    assert g.nodes[-2].attrs == {} and g.nodes[-2].output.type == NONE  # no attribute for None
    assert g.nodes[-1].attrs == {"value": True} and g.nodes[-1].output.type == BOOL


def test_given_types_hints_per_output_attrs_and_source():
    g, x = graph_with_x()
    where = SourceRange("k.py", 3, 5)
    n = Builder.at_end(g.block).op("prim::Pair", [x], [INT, BOOL], {"b": 2, "a": 1}, source=where, hints=["p", None])
    g.block.add_return(n.outputs[0])
    assert n.source is where
    assert print_graph(g).splitlines()[1] == "  %p : int, %0 : bool = prim::Pair[b=2, a=1](%x)  # k.py:3:5"
    with pytest.raises(ValueError):
        Builder.at_end(g.block).op("prim::Pair", [x], [INT, BOOL], hints=["only_one"])


def test_blocks_and_the_insertion_point_of_a_with():
    g, x = graph_with_x()
    b = Builder.at_end(g.block)
    cond = b.op("aten::lt", [x, b.constant(0)]).output
    branch = b.op("prim::If", [cond], [INT], hints="r")
    then, other = Builder.add_block(branch), Builder.add_block(branch)
    with b.inserting_into(then) as inside:
        assert inside is b
        then.add_return(b.op("aten::neg", [x]).output)
    with pytest.raises(RuntimeError), b.inserting_into(other):
        raise RuntimeError  # the point comes back on an error too
    assert b.block is g.block and b.anchor is None
    other.add_return(x)
    loop = b.op("prim::Loop", [x, b.constant(True), branch.output], [INT], hints="acc")
    body = Builder.add_block(loop, [(INT, "i"), (INT, "acc")])
    with b.inserting_into(body):
        body.add_return(b.constant(True))
        body.add_return(b.op("aten::add", body.params, hints="acc").output)
    b.op("aten::neg", [loop.output])  # back at the top block's end
    g.block.add_return(loop.output)
    assert text(g) == (
        "graph(%x : int):\n"
        "  %0 : int = prim::Constant[value=0]()\n"
        "  %1 : bool = aten::lt(%x, %0)\n"
        "  %r : int = prim::If(%1)\n"
        "    block0():\n"
        "      %2 : int = aten::neg(%x)\n"
        "      -> (%2)\n"
        "    block1():\n"
        "      -> (%x)\n"
        "  %3 : bool = prim::Constant[value=1]()\n"
        "  %acc : int = prim::Loop(%x, %3, %r)\n"
        "    block0(%i : int, %acc.1 : int):\n"
        "      %4 : bool = prim::Constant[value=1]()\n"
        "      %acc.2 : int = aten::add(%i, %acc.1)\n"
        "      -> (%4, %acc.2)\n"
        "  %5 : int = aten::neg(%acc)\n"
        "  return (%acc)\n"
    )


def test_inserting_before_a_node_in_a_with():
    g, x = graph_with_x()
    b = Builder.at_end(g.block)
    anchor = b.op("aten::neg", [x], hints="anchor")
    with b.inserting_into(g.block, anchor):
        b.op("aten::abs", [x], hints="early")
    b.op("aten::mul", [x, x], hints="late")
    assert [n.outputs[0].name for n in g.nodes] == ["early", "anchor", "late"]


def calls_to_node(path: Path) -> list[int]:
    """Lines calling a name ``Node`` (``Node(...)``, ``core.Node(...)``)."""
    lines = []
    for call in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(call, ast.Call):
            f = call.func
            if (isinstance(f, ast.Name) and f.id == "Node") or (isinstance(f, ast.Attribute) and f.attr == "Node"):
                lines.append(call.lineno)
    return lines


def test_the_scan_sees_calls(tmp_path):
    assert calls_to_node(ROOT / "ir" / "builder.py"), "the builder itself makes Nodes: the scan must see it"
    probe = tmp_path / "probe.py"
    probe.write_text("from scriptc.ir import core\nn = core.Node('prim::Constant')\nisinstance(n, core.Node)\n")
    assert calls_to_node(probe) == [2]


def test_nodes_are_made_by_the_builder_outside_the_ir():
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] != "ir"
        for line in calls_to_node(path)
    ]
    assert found == [], "make nodes with scriptc.ir.builder.Builder, not Node(...): " + ", ".join(found)
