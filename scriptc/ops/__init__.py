"""Operator declarations. Importing this package fills ``scriptc.ir.registry.REGISTRY``."""
from . import arith, arrayfns, builtins, fusion, indexing, lists, mathfns, prim, tensor  # noqa: F401
