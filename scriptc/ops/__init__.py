"""Operator declarations. Importing this package fills ``scriptc.ir.registry.REGISTRY``."""

from . import arith, arrayfns, builtins, fusion, indexing, lists, mathfns, prim, random, tensor  # noqa: F401
