"""Operator declarations. Importing this package fills ``scriptc.ir.registry.REGISTRY``."""
from . import arith, arrayfns, fusion, indexing, mathfns, prim, tensor  # noqa: F401
