"""Errors of the native backend.

``LoweringError`` is raised at compile time for IR the backend cannot lower (arrays, strings, printing...):
never a silent fallback to the interpreter.

Run-time errors raised by native code travel as an i32 status: every generated function returns 0 on success
or an error code, and the code indexes ``ERROR_TABLE``, which records the exception class and arguments to
raise (CPython's exact message) together with the operator and the source position that raised it, so that a
later version can point tracebacks at the user's line.
"""
from __future__ import annotations

import ctypes
import linecache
import threading
from dataclasses import dataclass

from ...errors import CompileError
from ...ir.core import Node, SourceRange


class LoweringError(CompileError):
    """The native backend cannot lower an operator or a type; names the operator and where it is used."""

    def __init__(self, op: str, detail: str, source: SourceRange | None = None):
        self.op, self.detail = op, detail
        where = f" at {source.short()}" if source is not None else ""
        super().__init__(f"native backend cannot lower {op}{where}: {detail}", source)


# Values known only at run time (an index, an axis size) that a message needs: native code stores them here
# before returning the error code, and ``make`` formats them into the message. One buffer per process: native
# code that raises in several threads at once may mix up these numbers (never the exception type).
PAYLOAD = (ctypes.c_int64 * 16)()
PAYLOAD_ADDRESS = ctypes.addressof(PAYLOAD)


@dataclass(frozen=True)
class RuntimeErrorEntry:
    """What native code means by one error code. With ``payload`` > 0, ``args[0]`` is a template whose
    ``{0}``, ``{1}``... are the first values of PAYLOAD."""
    exc_type: type
    args: tuple
    op: str
    source: SourceRange | None
    payload: int = 0

    def make(self) -> BaseException:
        if self.payload:
            exc = self.exc_type(self.args[0].format(*PAYLOAD[:self.payload]))
        else:
            exc = self.exc_type(*self.args)
        if self.source is not None:
            # str(exc) stays CPython's message; the traceback shows where in the user's code it was raised
            s = self.source
            line = linecache.getline(s.filename, s.line).strip()
            exc.add_note(f"raised by {self.op} in native code at {s.short()}" + (f": {line}" if line else ""))
        return exc


class ErrorTable:
    """Process-wide table of error codes (code = index + 1; 0 means success). Entries are deduplicated, so
    recompiling a graph reuses its codes."""

    def __init__(self):
        self._entries: list[RuntimeErrorEntry] = []
        self._codes: dict[RuntimeErrorEntry, int] = {}
        self._lock = threading.Lock()

    def code(self, exc_type: type, args: tuple, node: Node | None, payload: int = 0) -> int:
        entry = RuntimeErrorEntry(exc_type, tuple(args), node.kind if node is not None else "",
                                  node.source if node is not None else None, payload)
        with self._lock:
            code = self._codes.get(entry)
            if code is None:
                self._entries.append(entry)
                code = self._codes[entry] = len(self._entries)
            return code

    def __getitem__(self, code: int) -> RuntimeErrorEntry:
        if not 1 <= code <= len(self._entries):
            return RuntimeErrorEntry(SystemError, (f"native code returned unknown status {code}",), "", None)
        return self._entries[code - 1]

    def __len__(self):
        return len(self._entries)


ERROR_TABLE = ErrorTable()
