"""Argument types and signatures as text: the syntax of ``scriptc dump --types`` and of
``@scriptc.script(signatures=[...])``.

A type is ``int``, ``float``, ``bool``, a dtype with dimensions (``float64[2,3]``, ``float32[*,*]``, ``int64[]``:
a ``*`` or ``?`` is any length) or ``list[T]`` of one of those; a signature is types separated by commas
(``"float64[*], int"``). Only dtype and rank matter to compiled code: shapes are for ``scriptc dump``.
"""

from __future__ import annotations

import re

from .ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, ListType, TensorType, Type

_SCALARS = {"int": INT, "float": FLOAT, "bool": BOOL}
_HINT = "use int, float, bool, list[...] of those or e.g. float64[2,3], float32[*]"


def parse_arg_type(text: str) -> Type:
    """One argument type; ValueError naming the text otherwise."""
    text = text.strip()
    if text in _SCALARS:
        return _SCALARS[text]
    m = re.fullmatch(r"list\[(.*)\]", text)
    if m:
        elem = parse_arg_type(m.group(1))
        return ListType(elem.erase_shape() if isinstance(elem, TensorType) else elem)
    m = re.fullmatch(r"(\w+)\[([\d*?,\s]*)\]", text)
    if not m or m.group(1) not in DTYPE_NAMES:
        hint = " (numba's [:] is written [*] here)" if ":" in text else ""
        raise ValueError(f"bad type {text!r}: {_HINT}{hint}")
    dims = [d.strip() for d in m.group(2).split(",") if d.strip()]
    return TensorType(m.group(1), None, tuple(None if d in "*?" else int(d) for d in dims))


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for k, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_signature(text: str) -> tuple[Type, ...]:
    """The argument types of a signature string such as ``"float64[*], int"`` (shapes erased: native code is
    compiled per dtype and rank). ValueError naming the signature when it does not parse."""
    if not isinstance(text, str):
        raise TypeError(f'a signature is a string such as "float64[*], int", not {type(text).__name__}')
    if not text.strip():
        return ()
    try:
        types = [parse_arg_type(p) for p in split_top_level(text)]
    except ValueError as e:
        raise ValueError(f"bad signature {text!r}: {e}") from None
    return tuple(t.erase_shape() if isinstance(t, TensorType) else t for t in types)


def format_type(t: Type) -> str:
    """``t`` in the syntax ``parse_arg_type`` reads (dims as ``*``: a compiled signature has no shapes)."""
    if isinstance(t, TensorType):
        return f"{t.dtype or 'float64'}[{','.join('*' * (t.rank or 0))}]"
    if isinstance(t, ListType):
        return f"list[{format_type(t.elem)}]"
    return str(t)


def format_signature(types) -> str:
    return ", ".join(format_type(t) for t in types)


_NUMBA_SCALARS = {
    "float64": "float",
    "float32": "float",
    "double": "float",
    "int64": "int",
    "int32": "int",
    "intp": "int",
    "boolean": "bool",
    "bool_": "bool",
    "b1": "bool",
    "f8": "float",
    "i8": "int",
}


def from_numba(text: str) -> str | None:
    """Our signature for a numba signature string (``"float64(float64[:], int64)"`` -> ``"float64[*], int"``),
    or None when it does not translate."""
    m = re.fullmatch(r"\s*[\w\[\]:,\s]*?\((.*)\)\s*", text)
    args = m.group(1) if m else text
    out = []
    for part in split_top_level(args) if args.strip() else []:
        arr = re.fullmatch(r"(\w+)\[([:,\s\d]*)\]", part)
        if arr:
            part = f"{arr.group(1)}[{','.join('*' * (arr.group(2).count(',') + 1))}]"
        out.append(_NUMBA_SCALARS.get(part, part))
    sig = ", ".join(out)
    try:
        parse_signature(sig)
    except ValueError:
        return None
    return sig


__all__ = ["format_signature", "format_type", "from_numba", "parse_arg_type", "parse_signature"]
