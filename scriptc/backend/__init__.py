"""Execution: the reference interpreter today; native code generation through llvmlite next."""
from .interpreter import interpret  # noqa: F401
