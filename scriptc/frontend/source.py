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
    text: str = ""  # the definition's lines as read from the file

    def loc(self, node: ast.AST | None) -> SourceRange | None:
        if node is None or not hasattr(node, "lineno"):
            return None
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        return SourceRange(
            self.filename,
            node.lineno + self.line_offset,
            node.col_offset + self.col_offset + 1,
            end_line + self.line_offset if end_line else None,
            end_col + self.col_offset + 1 if end_col is not None else None,
        )

    def error(self, reason: str, node: ast.AST | None = None, hint: str | None = None) -> CompileError:
        return CompileError(reason, self.loc(node) or self.loc(self.tree), hint)


def get_source(func) -> FunctionSource:
    filename = inspect.getsourcefile(func) or getattr(func.__code__, "co_filename", "<unknown>")
    found = _lines_from_code(func, filename)
    try:
        lines, start = found if found is not None else inspect.getsourcelines(func)
    except (OSError, TypeError):
        raise CompileError(
            f"cannot find the source of '{func.__name__}': scriptc compiles from source, so the "
            f"function must be defined in a file"
        ) from None
    linecache.checkcache(filename)
    text = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(text))
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or isinstance(defs[0], ast.AsyncFunctionDef):
        raise CompileError(f"'{func.__name__}' is not a plain function definition")
    return FunctionSource(func, func.__name__, filename, defs[0], start - 1, indent, text)


def _last_line(code) -> int:
    """The last source line any instruction of ``code`` (or of a function nested in it) comes from."""
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return last


def _lines_from_code(func, filename: str):
    """(lines, first line number) of ``func``'s definition, decorators included, found from its code object's
    line table instead of tokenizing the file as ``inspect.getsourcelines`` does (a few ms per function); None
    where that is not certain (then inspect decides): the block must end at the last line with code, the next
    line of code being no deeper than the ``def``."""
    code = getattr(func, "__code__", None)
    if filename:
        linecache.checkcache(filename)  # as inspect does: a file edited since it was read is read again
    lines = linecache.getlines(filename, getattr(func, "__globals__", None)) if filename else []
    if code is None or not hasattr(code, "co_positions") or not lines:
        return None
    start, end = code.co_firstlineno, _last_line(code)
    if not 1 <= start <= end <= len(lines):
        return None
    block = lines[start - 1 : end]
    head = next((line for line in block if not line.lstrip().startswith("@")), "")
    indent = len(head) - len(head.lstrip())
    if not head.lstrip().startswith(("def ", "async def ")):
        return None
    if block[-1].rstrip().endswith("\\"):
        return None
    for line in lines[end:]:
        text = line.strip()
        if text and not text.startswith("#"):
            if len(line) - len(line.lstrip()) > indent:
                return None  # the body goes on past the last line with code
            break
    try:
        ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return None
    return block, start
