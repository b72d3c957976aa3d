"""Random array programs as a stranger writes them, for differential fuzzing against CPython + NumPy.

Statement-level programs over two array parameters ``x`` and ``y`` (one dtype, one shape) and an int ``n``,
drawn from the constructs that have given wrong results before:

- arrays rebound in loops and then written in place: ``x = x``, ``y = x``, ``x, y = y, x``, ``x = x[:]``,
  ``x = x[::-1]`` (a view), then ``x += ...``, ``x[0] = ...``, ``x[1:] = ...``, ``x //= ...``;
- scalars on the left of array operators in loops (``x = 3 * x``, ``z = False * z``);
- loops of zero, one and more trips (literal and ``n``) around lists (``lst = [...]``, ``append``, reads);
- stores whose value has extra leading axes of length 1 (``x[0] = x[None] * 2``...);
- element arithmetic with Python scalars, which NumPy does in the array's dtype (NEP 50): ``x[0] = y[0] * 200``
  wraps in uint8 and int16, ``y[0] - 7`` raises OverflowError for uint8, and accumulators started from a Python
  constant (``acc = 0`` then ``acc += x[0]``) become the dtype's NumPy scalar;
- arguments passed contiguous, reversed, strided, transposed and unaligned.

``cases()`` draws (source, argument factory). Every program runs under CPython; the test compares scriptc's
native code and its interpreter with it: results, argument mutations, the exception type.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

DTYPES = ["float64", "float32", "int64", "int32", "uint8", "int16"]
LAYOUTS = ["contiguous", "reversed", "strided", "transposed", "unaligned"]


class _Program:
    def __init__(self, draw, dtype: str, rank: int):
        self.draw, self.dtype, self.rank = draw, dtype, rank
        self.lines: list[str] = []
        self.integer = not dtype.startswith("float")

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def scalar(self) -> str:
        if self.integer:
            return self.pick(["1", "2", "3"])
        return self.pick(["0.5", "2.0", "-1.5", "1"])

    def array_expr(self, names) -> str:
        a, b = self.pick(names), self.pick(names)
        forms = [
            f"{a} + {b}",
            f"{a} * {self.scalar()}",
            f"{self.scalar()} * {a}",
            f"{a} - {b}",
            f"np.maximum({a}, {b})",
            f"{a}[::-1]" if self.rank == 1 else f"{a}[::-1, :]",
            f"{a} * 0 + {self.scalar()}",
            f"False * {a}" if not self.dtype.startswith("uint") else f"{a} * 1",
        ]
        if not self.integer:
            forms += [f"np.sin({a})", f"{a} / 2.0"]
        return self.pick(forms)

    def statement(self, indent: str, names: list[str], depth: int) -> None:
        kinds = [
            "rebind",
            "alias",
            "view",
            "update",
            "inplace",
            "element",
            "slice_store",
            "list",
            "swap",
            "unit_store",
            "element_arith",
            "accumulate",
        ] + (["loop"] * 4 if depth < 2 else [])
        kind = self.pick(kinds)
        out = self.lines
        tgt = self.pick(names)
        if kind == "rebind":
            out.append(f"{indent}{tgt} = {tgt}")
        elif kind == "alias":
            out.append(f"{indent}{tgt} = {self.pick(names)}")
        elif kind == "view":
            out.append(f"{indent}{tgt} = {tgt}[:]")
        elif kind == "swap":
            a, b = self.pick(names), self.pick(names)
            out.append(f"{indent}{a}, {b} = {b}, {a}")
        elif kind == "update":
            out.append(f"{indent}{tgt} = {self.array_expr(names)}")
        elif kind == "inplace":
            op = self.pick(["+=", "-=", "*="] + (["//="] if self.integer and not self.dtype.startswith("uint") else []))
            value = self.scalar() if self.draw(st.booleans()) else self.pick(names)
            if op == "//=" and value in names:
                value = f"(np.abs({value}) + 1)"
            out.append(f"{indent}{tgt} {op} {value}")
        elif kind == "element":
            index = "0" if self.rank == 1 else "0, 0"
            out.append(f"{indent}{tgt}[{index}] = {self.scalar()}")
        elif kind == "element_arith":
            index = "0" if self.rank == 1 else "0, 0"
            k = self.pick(["200", "1000", "3", "-7"] if self.integer else ["0.1", "3", "1e30"])
            op = self.pick(["+", "-", "*"])
            out.append(f"{indent}{tgt}[{index}] = {self.pick(names)}[{index}] {op} {k}")
        elif kind == "accumulate":
            index = "-1" if self.rank == 1 else "-1, 0"
            src = self.pick(names)
            out.append(f"{indent}acc = {'0' if self.integer else self.pick(['0.0', '0'])}")
            out.append(f"{indent}for v in range(3):")
            out.append(f"{indent}    acc += {src}[{index}] * {self.scalar()}")
            out.append(f"{indent}{tgt}[{index}] = acc")
        elif kind == "slice_store":
            out.append(f"{indent}{tgt}[1:] = {self.scalar()}")
        elif kind == "unit_store":
            src = self.pick(names)
            out.append(f"{indent}{tgt}[:] = {src}[None] * {self.scalar()}")
        elif kind == "list":
            index = "0" if self.rank == 1 else "0, 0"
            out.append(f"{indent}lst = [{tgt}[{index}], {self.scalar()}]")
            out.append(f"{indent}lst.append({self.pick(names)}[{index}])")
            convert = "int" if self.integer else "float"  # (Python scalars: see the module docstring)
            out.append(f"{indent}total = total + {convert}(lst[-1]) + {convert}(lst[0])")
        else:
            trips = self.pick(["0", "1", "3", "n"])
            out.append(f"{indent}for i in range({trips}):")
            for _ in range(self.draw(st.integers(1, 3))):
                self.statement(indent + "    ", names, depth + 1)


@st.composite
def cases(draw):
    """(source, dtype, rank, layout, n, seed): a program ``f(x, y, n)`` and how to make its arguments."""
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.sampled_from([1, 2]))
    layout = draw(st.sampled_from(LAYOUTS if rank == 2 else [k for k in LAYOUTS if k != "transposed"]))
    p = _Program(draw, dtype, rank)
    p.lines.append("    z = x * 1")
    p.lines.append("    total = 0" if p.integer else "    total = 0.0")
    for _ in range(draw(st.integers(2, 7))):
        p.statement("    ", ["x", "y", "z"], 0)
    p.lines.append("    return x, y, z, total")
    source = "@scriptc.script\ndef f(x: np.ndarray, y: np.ndarray, n: int):\n" + "\n".join(p.lines) + "\n"
    return source, dtype, rank, layout, draw(st.integers(0, 3)), draw(st.integers(0, 2**16))


def arguments(dtype: str, rank: int, layout: str, n: int, seed: int):
    """Fresh (x, y, n): small values (integers stay far from any overflow), in the drawn layout."""
    rng = np.random.default_rng(seed)
    shape = (5,) if rank == 1 else (3, 4)
    low, high = (1, 4) if not dtype.startswith("float") else (-2, 2)
    made = []
    for _ in range(2):
        values = rng.integers(low, high, shape) if not dtype.startswith("float") else rng.uniform(low, high, shape)
        made.append(_in_layout(values.astype(dtype), layout))
    return made[0], made[1], n


def _in_layout(a: np.ndarray, layout: str) -> np.ndarray:
    if layout == "reversed":
        return a[::-1].copy()[::-1]
    if layout == "strided":
        wide = np.zeros((a.shape[0] * 2,) + a.shape[1:], a.dtype)
        wide[::2] = a
        return wide[::2]
    if layout == "transposed":
        return np.ascontiguousarray(a.T).T
    if layout == "unaligned":
        buf = bytearray(a.nbytes + 1)
        u = np.frombuffer(buf, dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
        u[...] = a
        return u
    return a


__all__ = ["arguments", "cases"]
