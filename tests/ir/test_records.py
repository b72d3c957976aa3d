"""ir/records.py: the @record classes behave as the dataclasses they replace (fields, defaults, factories,
__post_init__, equality, hashing and immutability when frozen, repr)."""

import pickle

import pytest

from scriptc.ir.core import SourceRange
from scriptc.ir.records import FrozenInstanceError, field, record
from scriptc.ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType


@record
class Mutable:
    name: str
    count: int = 0
    items: list = field(default_factory=list)

    def __post_init__(self):
        self.checked = True


@record(frozen=True)
class Point:
    x: int
    y: int = 0


def test_init_defaults_factories_and_post_init():
    a, b = Mutable("a"), Mutable("b", 2, [1])
    assert (a.name, a.count, a.items, a.checked) == ("a", 0, [], True)
    assert b == Mutable(items=[1], name="b", count=2) and a != b
    assert a.items is not Mutable("a").items  # a fresh list each time
    with pytest.raises(TypeError):
        Mutable()
    with pytest.raises(TypeError):
        Mutable("a", name="b")
    with pytest.raises(TypeError):
        hash(a)  # mutable and compared by value: unhashable
    assert repr(b) == "Mutable(name='b', count=2, items=[1])"


def test_frozen_records_hash_and_refuse_assignment():
    p = Point(1)
    assert p == Point(1, 0) and hash(p) == hash(Point(1, 0)) and p != Point(1, 1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    assert pickle.loads(pickle.dumps(p)) == p


def test_ir_types_and_source_ranges():
    t = TensorType("float64", 2)
    assert t == TensorType("float64", None, (None, None)) and t.shape == (None, None)
    assert {t: 1}[TensorType("float64", 2)] == 1 and t != TensorType("float32", 2)
    assert INT != FLOAT and INT == type(INT)() and {INT, FLOAT, BOOL} == {BOOL, FLOAT, INT}
    assert ListType(TensorType("float64", None, (3,))).elem == TensorType("float64", 1)
    assert TupleType((INT, t)) == TupleType((INT, TensorType("float64", 2)))
    with pytest.raises(ValueError):
        TensorType("complex128", 1)
    with pytest.raises(AttributeError):
        t.rank = 3
    s = SourceRange("f.py", 3, 5)
    assert s == SourceRange("f.py", 3, 5, None, None) and hash(s) == hash(SourceRange("f.py", 3, 5))
    assert pickle.loads(pickle.dumps(t)) == t
