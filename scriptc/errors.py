"""User-facing errors. A CompileError points at the user's source like a C compiler does:

kernel.py:5:9: error: list comprehensions are not supported
    y = [v * 2 for v in x]
        ^^^^^^^^^^^^^^^^^^
hint: write a loop that fills an array: y = np.empty(n); for i in range(n): y[i] = ...
"""

from __future__ import annotations

import functools
import linecache
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `import scriptc` imports this module, not the IR
    from .ir.core import SourceRange


class CompileError(Exception):
    """Raised when a function uses Python outside the compiled subset or does not type-check.
    ``python_raises``: CPython raises too for these types, whatever the values (NumPy has no such operation)."""

    python_raises = False

    def __init__(self, reason: str, source: SourceRange | None = None, hint: str | None = None):
        self.reason, self.source, self.hint = reason, source, hint
        super().__init__(self._render())

    @property
    def filename(self):
        return self.source.filename if self.source else None

    @property
    def lineno(self):
        return self.source.line if self.source else None

    @property
    def col(self):
        return self.source.col if self.source else None

    def __reduce__(self):  # as rendered (the source file may not be where it is unpickled: a process pool)
        return _unpickled, (type(self), self.args, self.__dict__)

    def _render(self) -> str:
        if self.source is None:
            text = f"error: {self.reason}"
        else:
            s = self.source
            text = f"{s.filename}:{s.line}:{s.col}: error: {self.reason}"
            line = linecache.getline(s.filename, s.line).rstrip("\n")
            if line:
                end = s.end_col if s.end_line == s.line and s.end_col and s.end_col > s.col else len(line) + 1
                text += f"\n    {line}\n    {' ' * (s.col - 1)}{'^' * max(1, end - s.col)}"
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text


def _unpickled(cls, args, state):
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e


def user_facing(fn):
    """Raise a CompileError from the user's call into scriptc, without the 15-60 frames of scriptc internals
    that found it (``SCRIPTC_DEBUG=1`` keeps them, for debugging scriptc itself)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CompileError as e:
            if os.environ.get("SCRIPTC_DEBUG") == "1":
                raise
            e.__context__ = e.__cause__ = None
            raise e.with_traceback(None) from None

    return wrapper
