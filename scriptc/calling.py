"""Python's calling convention for scripted and loaded functions: arguments bound to parameters by name, with
CPython's messages, and the arrays native code refuses (a subclass whose meaning it would drop, a byte order or
an alignment it cannot read). Loaded libraries (``scriptc.load``) use this module without the compiler."""

from __future__ import annotations

import sys

import numpy as np


def check_array_kind(fname: str, pname: str, arg: np.ndarray, layout: bool = True, alignment: bool = True) -> None:
    """TypeError for an array native code would misread: a subclass whose meaning it would drop (a mask), and
    with ``layout``, a byte order it cannot read (and with ``alignment``, unaligned data). Scripted and loaded
    (``scriptc.load``) functions both check."""
    refused = _refused_subclass(arg)
    if refused is not None:
        raise TypeError(f"{fname}() argument '{pname}' is a {refused}")
    problem = unsupported_layout(arg, alignment) if layout else None
    if problem is not None:
        raise TypeError(f"{fname}() argument '{pname}' {problem}")


def unsupported_layout(a: np.ndarray, alignment: bool = True) -> str | None:
    """What native code cannot read in an array of a supported dtype (None: nothing)."""
    if not a.dtype.isnative:
        return (
            f"has a non-native byte order ({a.dtype.str}): pass a.astype(a.dtype.newbyteorder('=')), a copy "
            f"in this machine's order"
        )
    if alignment and not a.flags.aligned:
        return "has unaligned data: pass a copy (np.ascontiguousarray(a) aligns it)"
    return None


def _refused_subclass(arg) -> str | None:
    """What is wrong with an ndarray subclass whose meaning scripted code would drop (other subclasses, such as
    np.memmap, are taken as the array they are)."""
    masked = sys.modules.get("numpy.ma")  # (a process with a masked array has imported it: importing it is 20 ms)
    if masked is not None and isinstance(arg, masked.MaskedArray):
        return "numpy.ma.MaskedArray, whose mask scripted code would ignore: pass x.filled(value) or np.asarray(x)"
    if isinstance(arg, np.matrix):
        return "numpy.matrix, whose * is a matrix product: pass np.asarray(x) (and write @ for products)"
    return None


_MISSING = object()


def bind_by_name(fname: str, names, defaults: dict, args, kwargs) -> list:
    """Python's binding of positional and keyword arguments and ``defaults`` to the parameters ``names``, with
    CPython's messages for a missing, duplicate or unexpected argument (scripted and loaded functions)."""
    if len(args) > len(names):
        low = len(names) - len(defaults)
        count = f"from {low} to {len(names)}" if low < len(names) else f"{len(names)}"
        raise TypeError(
            f"{fname}() takes {count} positional argument{'s' * (len(names) != 1)} but "
            f"{len(args)} {'was' if len(args) == 1 else 'were'} given"
        )
    bound = list(args) + [_MISSING] * (len(names) - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{key}'")
        k = names.index(key)
        if bound[k] is not _MISSING:
            raise TypeError(f"{fname}() got multiple values for argument '{key}'")
        bound[k] = value
    missing = []
    for k, name in enumerate(names):
        if bound[k] is _MISSING:
            if name in defaults:
                bound[k] = defaults[name]
            else:
                missing.append(name)
    if missing:
        quoted = [f"'{m}'" for m in missing]
        listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"
        raise TypeError(
            f"{fname}() missing {len(missing)} required positional argument{'s' * (len(missing) != 1)}: {listed}"
        )
    return bound
