"""The version of scriptc (the on-disk cache keys on it): a module of its own, importable from any layer."""

__version__ = "0.1.0"
