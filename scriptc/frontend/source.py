"""Finding a function's source and mapping AST positions back to the file."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from ..ir.records import record
from ..errors import CompileError
from ..ir.core import SourceRange


@record
class FunctionSource:
    func: object
    name: str
    filename: str
    tree: ast.FunctionDef
    line_offset: int
    col_offset: int

    def loc(self, node: ast.AST | None) -> SourceRange | None:
        if node is None or not hasattr(node, "lineno"):
            return None
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        return SourceRange(self.filename, node.lineno + self.line_offset, node.col_offset + self.col_offset + 1,
                           end_line + self.line_offset if end_line else None,
                           end_col + self.col_offset + 1 if end_col is not None else None)

    def error(self, reason: str, node: ast.AST | None = None, hint: str | None = None) -> CompileError:
        return CompileError(reason, self.loc(node) or self.loc(self.tree), hint)


def get_source(func) -> FunctionSource:
    filename = inspect.getsourcefile(func) or getattr(func.__code__, "co_filename", "<unknown>")
    try:
        lines, start = inspect.getsourcelines(func)
    except (OSError, TypeError):
        raise CompileError(f"cannot find the source of '{func.__name__}': scriptc compiles from source, so the "
                           f"function must be defined in a file") from None
    linecache.checkcache(filename)
    text = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(text))
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or isinstance(defs[0], ast.AsyncFunctionDef):
        raise CompileError(f"'{func.__name__}' is not a plain function definition")
    return FunctionSource(func, func.__name__, filename, defs[0], start - 1, indent)
