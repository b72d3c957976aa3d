"""IR types, printed as TorchScript prints them.

Scalars are Python's: ``int`` (64-bit, wraps on overflow), ``float`` (IEEE double), ``bool``; ``str`` exists
for printing only. An element read from an array of a narrow dtype is a NumPy scalar of that dtype (``int32``,
``uint8``, ``float32``, ...: ``NumpyScalarType``), whose arithmetic is NumPy's (NEP 50: it wraps in its dtype,
and a Python scalar meeting it is converted to it); a float64, int64 or bool element is the Python scalar.
``TensorType`` is a NumPy array whose dtype and rank may be unknown (the generic graph prints ``Tensor``) and
whose shape, once inferred, prints per dimension (``Double(2, 3)``, ``Float(*, 3)``).
"""

from __future__ import annotations


import numpy as np

from .records import record


class Type:
    """Base of all IR types; instances are immutable and compare by value."""

    @property
    def is_scalar(self) -> bool:
        return isinstance(self, (IntType, FloatType, BoolType, NumpyScalarType))


@record(frozen=True)
class IntType(Type):
    def __str__(self):
        return "int"


@record(frozen=True)
class FloatType(Type):
    def __str__(self):
        return "float"


@record(frozen=True)
class BoolType(Type):
    def __str__(self):
        return "bool"


@record(frozen=True)
class NumpyScalarType(Type):
    """A NumPy scalar of a dtype narrower than Python's numbers (``NARROW_SCALARS``): what ``x[i]`` is when
    ``x`` is an int32 or float32 array. Printed as its dtype's name. Held in the registers of the Python scalar
    it converts to exactly (``decayed``): an int in an i64, a float in a double, rounded to the dtype."""

    dtype: str

    def __str__(self):
        return self.dtype

    @property
    def decayed(self) -> Type:
        """The Python scalar type holding every value of this one exactly."""
        return FLOAT if np.dtype(self.dtype).kind == "f" else INT


NARROW_SCALARS = ("int8", "int16", "int32", "uint8", "uint32", "float16", "float32")


@record(frozen=True)
class StrType(Type):
    def __str__(self):
        return "str"


@record(frozen=True)
class NoneType(Type):
    def __str__(self):
        return "NoneType"


@record(frozen=True)
class TupleType(Type):
    elems: tuple[Type, ...]

    def __str__(self):
        return "(" + ", ".join(map(str, self.elems)) + ")"

    def with_elems(self, elems) -> "TupleType":
        """The same kind of tuple (a NamedTuple keeps its class) with other element types."""
        return TupleType(tuple(elems))


# NamedTuple classes the frontend has seen, by ``module.qualname``: what a NamedTupleType's values are built as.
NAMED_TUPLES: dict[str, type] = {}


@record(frozen=True)
class NamedTupleType(TupleType):
    """A ``typing.NamedTuple`` class used by scripted code: a tuple whose elements have names. Printed with the
    class's module, as TorchScript prints classes: ``train.TrainState(step: int, w: Double(*))``; ``qualname``
    (``module.Class``) identifies the class, registered in ``NAMED_TUPLES`` so that values built in native code or
    the interpreter are instances of it (two modules may each have a ``Params``)."""

    elems: tuple[Type, ...]  # a record's fields are its own: the tuple's elements are named again
    qualname: str = ""
    fields: tuple[str, ...] = ()

    def __str__(self):
        inner = ", ".join(f"{f}: {t}" for f, t in zip(self.fields, self.elems))
        return f"{self.qualname}({inner})"

    def with_elems(self, elems) -> "NamedTupleType":
        return NamedTupleType(tuple(elems), self.qualname, self.fields)

    @property
    def cls(self) -> type | None:
        return NAMED_TUPLES.get(self.qualname)

    def make(self, values):
        """The Python value: an instance of the class (a plain tuple if the class is not known here)."""
        cls = self.cls
        return cls(*values) if cls is not None else tuple(values)


def named_tuple_type(cls, element_type_of) -> "NamedTupleType | None":
    """The type of a ``typing.NamedTuple`` class whose field annotations ``element_type_of`` maps to IR types
    (None when one does not map)."""
    import typing

    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation that does not evaluate: not a type we compile
        return None
    elems = [element_type_of(hints.get(f)) for f in cls._fields]
    if None in elems:
        return None
    qualname = f"{cls.__module__}.{cls.__qualname__}"
    NAMED_TUPLES[qualname] = cls
    return NamedTupleType(tuple(elems), qualname, tuple(cls._fields))


def is_named_tuple_class(obj) -> bool:
    return (
        isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields") and hasattr(obj, "__annotations__")
    )


@record(frozen=True)
class ListType(Type):
    """A mutable Python list whose elements all have type ``elem`` (a scalar, or an array of one dtype and rank:
    its shape is not part of the type, elements may differ in shape). Printed as TorchScript prints lists:
    ``int[]``, ``float[]``, ``Tensor[]`` (generic), ``Double(*, *)[]`` (a known dtype and rank). ``elem`` None is
    an empty literal whose element type the frontend has not seen yet (never in a finished graph)."""

    elem: Type | None

    def __post_init__(self):
        e = self.elem
        if isinstance(e, TensorType) and e.shape is not None and any(d is not None for d in e.shape):
            object.__setattr__(self, "elem", TensorType(e.dtype, e.rank))

    def __str__(self):
        return f"{self.elem}[]"


# TorchScript's scalar-type names, and the NumPy dtypes we accept.
DTYPE_NAMES = {
    "float64": "Double",
    "float32": "Float",
    "float16": "Half",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "uint32": "UInt",
    "bool": "Bool",
}
NAME_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}


@record(frozen=True)
class TensorType(Type):
    """An ndarray. ``dtype`` is a NumPy dtype name or None (unknown); ``shape`` holds an int or None per
    dimension once the rank is known."""

    dtype: str | None = None
    rank: int | None = None
    shape: tuple[int | None, ...] | None = None

    def __init__(self, dtype: str | None = None, rank: int | None = None, shape=None):
        if dtype is not None and dtype not in DTYPE_NAMES:
            raise ValueError(f"unsupported dtype {dtype}")
        if shape is None and rank is not None:
            shape = (None,) * rank
        if shape is not None:
            rank = len(shape)
        set_field = object.__setattr__
        set_field(self, "dtype", dtype)
        set_field(self, "rank", rank)
        set_field(self, "shape", shape)

    @staticmethod
    def of(dtype, rank: int | None = None, shape=None) -> "TensorType":
        return TensorType(
            np.dtype(dtype).name if dtype is not None else None, rank, tuple(shape) if shape is not None else None
        )

    @property
    def known(self) -> bool:
        return self.dtype is not None and self.rank is not None

    @property
    def np_dtype(self):
        return np.dtype(self.dtype)

    def erase_shape(self) -> "TensorType":
        return TensorType(self.dtype, self.rank)

    def __str__(self):
        if self.dtype is None:
            return "Tensor"
        name = DTYPE_NAMES[self.dtype]
        if self.shape is None:
            return f"{name}(...)"
        return name + "(" + ", ".join("*" if d is None else str(d) for d in self.shape) + ")"


INT, FLOAT, BOOL, STR, NONE = IntType(), FloatType(), BoolType(), StrType(), NoneType()
TENSOR = TensorType()


def element_type(dtype: str) -> Type:
    """The scalar type of an element read from an array of this dtype: a NumPy scalar for a narrow dtype, else
    the Python scalar (np.float64 is a float; np.int64 computes as scriptc's 64-bit int)."""
    if dtype in NARROW_SCALARS:
        return NumpyScalarType(dtype)
    kind = np.dtype(dtype).kind
    return BOOL if kind == "b" else INT if kind in "iu" else FLOAT


def scalar_type(dtype: str) -> Type:
    """The scalar type of a NumPy scalar of ``dtype`` (``element_type``: the same rule)."""
    return element_type(dtype)


def is_numpy_scalar(value) -> bool:
    """Whether a value is a NumPy scalar of a narrow dtype (the values of a ``NumpyScalarType``)."""
    return isinstance(value, np.generic) and value.dtype.name in NARROW_SCALARS


def decayed(t: Type) -> Type:
    """``t``, a NumPy scalar as the Python scalar holding its value."""
    return t.decayed if isinstance(t, NumpyScalarType) else t


def scalar_dtype(t: Type) -> str:
    """The dtype NumPy gives an array made from a scalar of this type."""
    if isinstance(t, NumpyScalarType):
        return t.dtype
    return {BOOL: "bool", INT: "int64", FLOAT: "float64"}[t]


def python_sample(t: Type):
    """A value of scalar type ``t``: a Python scalar, which NumPy 2 treats as 'weak' in promotion, or a NumPy
    scalar (strong)."""
    if isinstance(t, NumpyScalarType):
        return np.dtype(t.dtype).type(0)
    return {BOOL: False, INT: 0, FLOAT: 0.0}[t]


def result_dtype(*operands: Type) -> str:
    """NumPy 2's result dtype for arrays and Python scalars mixed (scalars are weak, NEP 50)."""
    args = [np.dtype(t.dtype) if isinstance(t, TensorType) else python_sample(t) for t in operands]
    return np.result_type(*args).name


def join(a: Type, b: Type) -> Type | None:
    """The type a variable has after paths giving ``a`` and ``b`` merge; None if they cannot merge.

    int and float merge to float (Python's numeric tower); tensors merge when dtype and rank agree, keeping
    the dimensions both paths agree on."""
    if a == b:
        return a
    if {a, b} == {INT, FLOAT}:
        return FLOAT
    if isinstance(a, NumpyScalarType) or isinstance(b, NumpyScalarType):
        return _join_numpy_scalars(a, b)
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype != b.dtype or a.rank != b.rank:
            return None
        if a.shape is None:
            return a
        return TensorType(a.dtype, None, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))
    if isinstance(a, ListType) and isinstance(b, ListType):
        # a list is a reference: both paths must agree on what it holds (an int[] is never a float[])
        e = join(a.elem, b.elem) if isinstance(a.elem, TensorType) else None
        return ListType(e) if e is not None and e.rank is not None else None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        if (
            isinstance(a, NamedTupleType) != isinstance(b, NamedTupleType)
            or isinstance(a, NamedTupleType)
            and (a.qualname, a.fields) != (b.qualname, b.fields)
        ):
            return None
        elems = [join(x, y) for x, y in zip(a.elems, b.elems)]
        return None if None in elems else a.with_elems(elems)
    return None


def _join_numpy_scalars(a: Type, b: Type) -> Type | None:
    """A NumPy scalar merging with another scalar. Two NumPy scalars: NumPy's promotion of the two where it
    holds both exactly (int8 and int16: int16), else the Python scalar that does (int32 and uint32: int). A
    NumPy scalar and a Python scalar: the Python scalar holding both (int32 and int: int; float32 and int:
    float), as a Python value converted to the NumPy scalar could raise or round where Python just binds it.
    (The emitter gives a variable the NumPy scalar's type where the Python value is a constant it holds
    exactly, such as ``s = 0.0`` before ``s += x[i]``: ``exact_numpy_join``.)"""
    if not (a.is_scalar and b.is_scalar):
        return None
    if isinstance(a, NumpyScalarType) and isinstance(b, NumpyScalarType):
        return scalar_type(np.result_type(a.dtype, b.dtype).name)
    return join(decayed(a), decayed(b)) or (INT if BOOL in (a, b) and INT in (decayed(a), decayed(b)) else None)


def exact_numpy_join(python_value, t: Type) -> bool:
    """Whether the Python scalar ``python_value`` (a constant) converts to the NumPy scalar type ``t`` exactly,
    so that a variable holding either can have ``t``'s type, as NumPy gives it after its first operation."""
    if (
        not isinstance(t, NumpyScalarType)
        or isinstance(python_value, bool)
        or not isinstance(python_value, (int, float))
    ):
        return False
    if isinstance(python_value, float) and np.dtype(t.dtype).kind != "f":
        return False
    try:
        with np.errstate(all="ignore"):
            converted = np.dtype(t.dtype).type(python_value)
    except (OverflowError, ValueError):
        return False
    back = float(converted) if isinstance(python_value, float) else int(converted)  # (== would compare as NEP 50:
    return back == python_value or python_value != python_value  # in the NumPy dtype)


def parse_type(text: str) -> Type:
    """Inverse of ``str(type)``."""
    from .parser import TypeParser  # (cycle: parser imports this module)

    return TypeParser(text).parse()
