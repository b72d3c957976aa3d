"""Operator declarations. Importing this package fills ``scriptc.ir.registry.REGISTRY``."""
from . import arith, mathfns, prim, tensor  # noqa: F401
