"""Operator declarations. Importing this package fills ``scriptc.ir.registry.REGISTRY``."""
from . import arith, arrayfns, fusion, lists, mathfns, prim, tensor  # noqa: F401
