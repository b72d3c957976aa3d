"""The operator registry: every operator is declared once, here or in ``scriptc/ops``, with

- its schema (``aten::sum(Tensor self, *, int? axis) -> Number|Tensor``; names after ``*`` are compile-time
  attributes, ``T... name`` is variadic),
- its type rule (``infer``), which the frontend uses to type nodes and the verifier to check them,
- its shape rule (``shape``), which shape inference uses to refine array types to known dimensions,
- its reference implementation (Python/NumPy), which the interpreter runs and constant folding calls,
- its effect (pure, may raise, writes its first operand, does I/O), which passes consult,
- the Python callables and ndarray methods that the frontend maps onto it,
- later its lowering and derivative.

Most type rules are *derived from the reference implementation*: the rule evaluates the implementation on tiny
sample values of the argument types and reads off the result's type, so NumPy's own promotion rules
(NEP 50 weak scalars, ``true_divide`` of ints, ``sum`` of int32) hold without being written down twice.
"""

from __future__ import annotations

import enum
import re
import warnings
from functools import lru_cache
from typing import Callable

import numpy as np

from .records import record, field
from .types import (
    BOOL,
    FLOAT,
    INT,
    NAMED_TUPLES,
    NARROW_SCALARS,
    NONE,
    STR,
    TENSOR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
    element_type,
)


class OpTypeError(TypeError):
    """An operator does not accept these argument types; the message is for the user. ``numpy_raises``: NumPy
    raises this TypeError for any values of these types (its ufunc finds no loop), so Python would too."""

    numpy_raises = False


class NeedsSpecialization(Exception):
    """The rule needs an array's dtype or rank, which the generic (unspecialized) graph does not know."""


class Effect(enum.IntEnum):
    PURE = 0  # no effect: may be removed, duplicated, reordered
    RAISES = 1  # pure but may raise (index out of bounds, division by zero): keep unless proven safe
    WRITES = 2  # writes into its first operand (index assignment, in-place arithmetic)
    IO = 3  # observable output (print) or unknown (calls)


@record
class OpDef:
    name: str
    schema: str
    params: tuple[str, ...]
    attrs: tuple[str, ...]
    variadic: str | None
    infer: Callable | None
    impl: Callable | None
    effect: Effect
    elementwise: bool = False
    py: tuple = ()
    methods: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    # Shape rule: ``shape(types, consts, **attrs) -> list`` with one entry per output, a tuple of int|None per
    # dimension for an array output and None for a scalar output (or when nothing is known). ``types`` are the
    # input types (TensorType with shapes, or scalars); ``consts`` holds each input's value where shape
    # inference knows it (a prim::Constant, a dimension read from a known shape), else None. An input typed
    # NoneType is always None. Rules must be sound: a dimension they give is the one NumPy produces.
    shape: Callable | None = None
    # Derivative rule (reverse mode, ``scriptc/transforms/autodiff.py``): ``vjp(e, g, out, *inputs, **attrs)``
    # returns one adjoint per input (None: no contribution), built with the emitter ``e`` from the output's
    # adjoint ``g``, the output ``out`` and the inputs. ``ZERO_DERIVATIVE`` for piecewise-constant operators.
    vjp: Callable | None = None
    # Batching rule (``scriptc.vmap``, ``scriptc/transforms/vmap.py``): a ``BatchRule`` saying how the operator
    # runs on a batch of examples at once; element-wise operators default to ``Batch.ELEMENTWISE``. None: no
    # rule (vmap refuses the operator on mapped values); ``Batch.unbatchable(why)`` says why not.
    batch: "BatchRule | None" = None

    def __init__(
        self,
        name,
        schema,
        params,
        attrs,
        variadic,
        infer,
        impl,
        effect,
        elementwise=False,
        py=(),
        methods=(),
        extra=None,
        shape=None,
        vjp=None,
        batch=None,
    ):
        # written out (not the record's generic one): 161 operators are made by ``import scriptc``
        self.name, self.schema, self.params, self.attrs, self.variadic = name, schema, params, attrs, variadic
        self.infer, self.impl, self.effect, self.elementwise, self.py = infer, impl, effect, elementwise, py
        self.methods, self.extra = methods, {} if extra is None else extra
        self.shape, self.vjp, self.batch = shape, vjp, batch

    def takes_numpy_scalar(self, position: int, count: int) -> bool:
        """Whether a NumPy scalar operand at ``position`` (of ``count``) reaches the operator as it is:
        element-wise operators (NumPy's own arithmetic on them) and those declared with ``numpy_scalars=True``
        (conversions, tuples, in-place arithmetic), ``"last"`` or a position (a store's value, converted as NumPy
        converts it). Any other operand is the Python scalar holding the value (the frontend converts it first:
        ``math.sqrt(x[i])`` and ``range(x[i])`` see a float and an int, as in Python)."""
        takes = self.elementwise or self.extra.get("numpy_scalars", False)
        if type(takes) is int:
            return position == takes
        return takes is True or takes == "last" and position == count - 1

    def result_types(self, types: list[Type], attrs: dict) -> list[Type]:
        """Output types for these input types, or OpTypeError / NeedsSpecialization."""
        if self.infer is None:
            raise OpTypeError(f"{self.name} has no type rule")
        if self.elementwise and any(isinstance(t, TensorType) and not t.known for t in types):
            return [TENSOR]
        out = self.infer(*types, **attrs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def result_shapes(self, types: list[Type], consts: list, attrs: dict) -> list | None:
        """Output shapes for these input types and known input values (see ``shape``), or None when the op
        has no shape rule (the caller falls back to the type rule: every dimension unknown)."""
        if self.shape is None:
            return None
        return list(self.shape(list(types), list(consts), **attrs))


REGISTRY: dict[str, OpDef] = {}
_BY_CALLABLE: dict[int, OpDef] = {}
_BY_METHOD: dict[str, OpDef] = {}

_SCHEMA = re.compile(r"^(?P<name>\w+::\w+)\((?P<args>.*)\)\s*->\s*(?P<ret>.*)$")


def parse_schema(schema: str):
    m = _SCHEMA.match(schema)
    if not m:
        raise ValueError(f"bad schema {schema!r}")
    params, attrs, variadic, in_attrs = [], [], None, False
    for part in filter(None, (p.strip() for p in m.group("args").split(","))):
        if part == "*":
            in_attrs = True
            continue
        ptype, pname = part.rsplit(" ", 1)
        (attrs if in_attrs else params).append(pname)
        if ptype.endswith("..."):
            variadic = pname
    return m.group("name"), tuple(params), tuple(attrs), variadic


def register(
    schema: str,
    *,
    impl=None,
    infer=None,
    effect=Effect.PURE,
    elementwise=False,
    py=(),
    methods=(),
    shape=None,
    vjp=None,
    **extra,
) -> OpDef:
    """Declare an operator. ``shape`` is its shape rule (see ``OpDef.shape``); element-wise operators get
    ``elementwise_shape`` (NumPy broadcasting) unless they give their own."""
    name, params, attrs, variadic = parse_schema(schema)
    if name in REGISTRY:
        raise ValueError(f"operator {name} declared twice")
    if shape is None and elementwise:
        shape = elementwise_shape
    batch = extra.pop("batch", Batch.ELEMENTWISE if elementwise else None)
    op = OpDef(
        name,
        schema,
        params,
        attrs,
        variadic,
        infer,
        impl,
        effect,
        elementwise,
        tuple(py),
        tuple(methods),
        extra=extra,
        shape=shape,
        vjp=vjp,
        batch=batch,
    )
    REGISTRY[name] = op
    for f in op.py:
        _BY_CALLABLE[id(f)] = op
    for m in op.methods:
        _BY_METHOD[m] = op
    return op


@record(frozen=True)
class BatchRule:
    """How ``scriptc.vmap`` runs an operator on a batch (``scriptc/transforms/vmap.py`` implements the kinds).

    A batched value has the batch dimension first: a per-example array of shape S is an array of shape (B,) + S,
    a per-example scalar a 1-D array of B elements (float64, int64 or bool). Kinds:

    - ``elementwise``: operands are aligned (unit dimensions inserted after the batch dimension) so that NumPy
      broadcasting pairs each example with itself; batched scalars are cast first to the dtype the per-example
      operation computes in (NEP 50: a Python float with a float32 array computes in float32; Python's ``int +
      float`` in float64); ``promote`` lists the operands taking part in that promotion (None: all);
    - ``reduction``: ``axis`` moves by one; a reduction over everything reduces the flattened example;
    - ``axis``: operators along an axis that keep the rank (scans, sorts, ``diff``): the axis moves by one, and
      ``axis=None`` (flatten) works on the flattened example;
    - ``same``: the operator applies to the batched operand as it is (copies, casts, ``*_like``);
    - ``lanes``: a loop over the examples, each running the operator itself (exact; used where the result may
      differ in shape between examples, or no vector form exists);
    - ``custom``: ``emit(b, node, inputs) -> outputs``, written beside the operator with the batching emitter
      ``b`` (its helpers: ``b.op``, ``b.batched``, ``b.align``, ``b.lanes``, ...);
    - ``unbatchable``: ``reason`` says why (a CompileError when a mapped value reaches the operator);
    - ``transform``: the transform handles the operator itself (control flow, tuples, print, raise).

    ``unbatched_result``: the result never depends on the batch (shape queries). ``view``: the result is a view of
    operand 0 when only operand 0 is batched (other operands batched go through ``lanes``, a copy). ``fresh``: the
    custom rule also makes a batched result from unbatched operands (a new array or list that batched values are
    written into later)."""

    kind: str
    emit: Callable | None = None
    promote: tuple | None = None
    unbatched_result: bool = False
    view: bool = False
    fresh: bool = False
    reason: str = ""


class Batch:
    """The batching rules operators declare (``batch=`` in ``register``)."""

    ELEMENTWISE = BatchRule("elementwise")
    REDUCTION = BatchRule("reduction")
    AXIS = BatchRule("axis")
    SAME = BatchRule("same")
    LANES = BatchRule("lanes")
    TRANSFORM = BatchRule("transform")

    @staticmethod
    def custom(emit: Callable, **options) -> BatchRule:
        return BatchRule("custom", emit, **options)

    @staticmethod
    def elementwise(promote: tuple) -> BatchRule:
        return BatchRule("elementwise", promote=promote)

    @staticmethod
    def unbatchable(reason: str) -> BatchRule:
        return BatchRule("unbatchable", reason=reason)


def ZERO_DERIVATIVE(e, g, out, *inputs, **attrs):
    """The derivative rule of piecewise-constant operators (floor, round, sign): zero almost everywhere."""
    return (None,) * len(inputs)


# The IR knows no operator of its own (as an MLIR context knows no dialect until one is loaded): importing
# scriptc.ops declares them, and every package above ir does.
UNDECLARED = " (no operator is declared: import scriptc.ops first)"


def lookup(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown operator {name}{UNDECLARED if not REGISTRY else ''}") from None


def op_for_callable(obj) -> OpDef | None:
    return _BY_CALLABLE.get(id(obj))


def op_for_method(name: str) -> OpDef | None:
    return _BY_METHOD.get(name)


# -- type rules derived from the reference implementation ------------------------------------------------


def sample(t: Type):
    """A tiny value of type ``t``: nonzero, so that sample division does not raise."""
    if t == INT:
        return 1
    if t == FLOAT:
        return 1.0
    if t == BOOL:
        return True
    if t == NONE:
        return None
    if t == STR:
        return "s"
    if isinstance(t, NumpyScalarType):
        return np.dtype(t.dtype).type(1)
    if isinstance(t, TensorType):
        if not t.known:
            raise NeedsSpecialization(str(t))
        return np.ones((1,) * t.rank, dtype=t.dtype)
    if isinstance(t, TupleType):
        return tuple(sample(e) for e in t.elems)
    if isinstance(t, ListType):  # (list ==, <, + and the like: an operator with a list operand)
        raise OpTypeError(f"operators on lists ({t}) are not supported: index, iterate or compare their elements")
    raise OpTypeError(f"no sample value for {t}")


def type_of(v) -> Type:
    """The IR type of a Python/NumPy value; a NumPy scalar of a narrow dtype is that NumPy scalar, one of
    float64, int64 or bool the Python scalar it converts to."""
    if isinstance(v, np.generic) and v.dtype.name in NARROW_SCALARS:
        return NumpyScalarType(v.dtype.name)
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    if isinstance(v, (int, np.integer)):
        return INT
    if isinstance(v, (float, np.floating)):
        return FLOAT
    if isinstance(v, np.ndarray) or type(v).__name__ == "UnrestoredArray":
        return TensorType(v.dtype.name, v.ndim)
    if isinstance(v, str):
        return STR
    if v is None:
        return NONE
    if isinstance(v, tuple):
        elems = tuple(type_of(e) for e in v)
        cls = type(v)
        qualname = f"{cls.__module__}.{cls.__qualname__}"
        if cls is not tuple and NAMED_TUPLES.get(qualname) is cls:
            return NamedTupleType(elems, qualname, tuple(cls._fields))
        return TupleType(elems)
    raise OpTypeError(f"values of type {type(v).__name__} are not supported")


def by_sample(impl: Callable) -> Callable:
    """A type rule that runs ``impl`` on sample values and returns the result's type."""

    @lru_cache(maxsize=None)
    def infer(*types, **attrs):
        args = [sample(t) for t in types]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = impl(*args, **attrs)
        except (TypeError, ValueError, IndexError, np.exceptions.AxisError) as e:
            error = OpTypeError(_numpy_message(e))
            error.numpy_raises = isinstance(e, TypeError)
            raise error from None
        if isinstance(out, np.ndarray) and out.dtype.name not in _DTYPES_OK:
            hint = " (scriptc has no uint64: convert first, e.g. x.astype(np.int64))" if out.dtype == np.uint64 else ""
            raise OpTypeError(f"unsupported result dtype {out.dtype}{hint}")
        return type_of(out)

    return infer


_DTYPES_OK = {"float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "uint32", "bool"}


def _numpy_message(e: Exception) -> str:
    msg = str(e).split("\n")[0]
    return msg[0].lower() + msg[1:] if msg else type(e).__name__


def scalar_result(t: Type) -> Type:
    """Element type for a 0-d result (NumPy returns a scalar there)."""
    return element_type(t.dtype) if isinstance(t, TensorType) and t.rank == 0 else t


# -- shape rules: helpers shared by the operator declarations ------------------------------------------------
# A shape is a tuple with an int or None (unknown) per dimension; None instead of a tuple means "not even the
# rank is known". Scalars broadcast as shape ().


def shape_of(t: Type) -> tuple | None:
    """The shape of a value of type ``t``: its dimensions for an array (None if the rank is unknown), () for
    a scalar."""
    if isinstance(t, TensorType):
        return t.shape
    return () if t.is_scalar else None


def broadcast_dims(dims) -> int | None:
    """One dimension of a NumPy broadcast. A known dimension other than 1 decides it (an unknown one is then
    either equal or 1, else the operation raises); if all known ones are 1, an unknown one leaves it unknown."""
    dims = list(dims)
    big = {d for d in dims if d is not None and d != 1}
    if len(big) > 1:
        return None  # the operation raises: nothing after it runs
    if big:
        return big.pop()
    return None if None in dims else 1


def broadcast_shapes(*shapes) -> tuple | None:
    """NumPy broadcasting of shapes whose dimensions may be unknown (None if a rank is unknown)."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(broadcast_dims(col) for col in zip(*padded)) if rank else ()


def elementwise_shape(types, consts, **attrs) -> list:
    """Shape rule of element-wise operators: the broadcast of all operands."""
    return [broadcast_shapes(*(shape_of(t) for t in types))]


def same_shape(types, consts, **attrs) -> list:
    """Shape rule of operators whose result has the shape of their first operand (copies, casts, *_like)."""
    return [shape_of(types[0])]


def no_outputs(types, consts, **attrs) -> list:
    """Shape rule of operators without results (in-place updates keep their operand's shape)."""
    return []


def numel(shape) -> int | None:
    """The number of elements of a shape, if every dimension is known."""
    if shape is None or None in shape:
        return None
    n = 1
    for d in shape:
        n *= d
    return n


def const_dim(t: Type, value) -> int | None:
    """A dimension given by an int (or bool) input with a known value; None if unknown or negative."""
    if value is None or t not in (INT, BOOL) or isinstance(value, tuple):
        return None
    d = int(value)
    return d if d >= 0 else None
