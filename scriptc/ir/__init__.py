"""The SSA IR: types, graphs, the TorchScript-style printer and parser, the verifier, the op registry."""

from .core import Block, Graph, Node, SourceRange, Value  # noqa: F401
from .parser import parse  # noqa: F401
from .printer import print_graph  # noqa: F401
from .types import BOOL, FLOAT, INT, NONE, STR, TENSOR, TensorType, TupleType, Type  # noqa: F401
from .verifier import VerifyError, verify  # noqa: F401
