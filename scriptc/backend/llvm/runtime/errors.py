"""Errors of the native backend.

``LoweringError`` is raised at compile time for IR the backend cannot lower (arrays, strings, printing...):
never a silent fallback to the interpreter.

Run-time errors raised by native code travel as an i32 status: every generated function returns 0 on success
or an error code, and the code indexes ``ERROR_TABLE``, which records the exception class and arguments to
raise (CPython's exact message) together with the operator and the source position that raised it, so that a
later version can point tracebacks at the user's line.

Numbers a message needs (an index, a shape) travel in the *payload*, a small per-thread buffer: native code
stores them there before returning the code, and the Python side reads them on the same thread while making
the exception. The buffer is a POSIX thread-specific value (``pthread_getspecific``; LLVM's ``thread_local``
globals are not supported by MCJIT), allocated by native code on a thread's first raise and freed when the
thread exits, so two threads raising at once (``nogil=True``) never see each other's numbers.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import linecache
import string
import sys
import threading

from ....errors import CompileError
from ....ir.core import Node, SourceRange
from ....ir.records import record
from . import symbols
from .digests import blake2b


class LoweringError(CompileError):
    """The native backend cannot lower an operator or a type; names the operator and where it is used."""

    def __init__(self, op: str, detail: str, source: SourceRange | None = None):
        self.op, self.detail = op, detail
        where = f" at {source.short()}" if source is not None else ""
        super().__init__(f"native backend cannot lower {op}{where}: {detail}", source)


# The payload: PAYLOAD_SLOTS i64 per thread, under one pthread key created here (its destructor frees a thread's
# buffer when the thread exits). FALLBACK_PAYLOAD is used by a thread whose buffer could not be allocated.
PAYLOAD_SLOTS = 64  # numbers one message carries: every dimension of 8 rank-8 operands
_LIBC = ctypes.CDLL(None)
PTHREAD_KEY_T = ctypes.c_uint if sys.platform.startswith("linux") else ctypes.c_ulong
PAYLOAD_SYMBOLS = {name: f"scriptc.{name}" for name in ("pthread_getspecific", "pthread_setspecific", "calloc")}
STACK_FLOOR_SLOT = PAYLOAD_SLOTS  # after them: the thread's lowest safe stack address (builtins_lower.py)
FALLBACK_PAYLOAD = (ctypes.c_int64 * (PAYLOAD_SLOTS + 1))()
FALLBACK_PAYLOAD_ADDRESS = ctypes.addressof(FALLBACK_PAYLOAD)


def _payload_key() -> int:
    key = PTHREAD_KEY_T()
    free = ctypes.cast(_LIBC.free, ctypes.c_void_p)
    if _LIBC.pthread_key_create(ctypes.byref(key), free) != 0:
        raise OSError("pthread_key_create failed: no thread-specific key for the error payload")
    return key.value


PAYLOAD_KEY = _payload_key()
_PAYLOAD_KEY_CELL = PTHREAD_KEY_T(PAYLOAD_KEY)  # native code loads the key from here (by name, not value)
PAYLOAD_KEY_ADDRESS = ctypes.addressof(_PAYLOAD_KEY_CELL)
_getspecific = _LIBC.pthread_getspecific
_getspecific.restype, _getspecific.argtypes = ctypes.c_void_p, [PTHREAD_KEY_T]
for _name, _symbol in PAYLOAD_SYMBOLS.items():
    symbols.bind(_symbol, ctypes.cast(getattr(_LIBC, _name), ctypes.c_void_p).value)
symbols.bind("scriptc.payload_key", PAYLOAD_KEY_ADDRESS)
symbols.bind("scriptc.payload_fallback", FALLBACK_PAYLOAD_ADDRESS)


def payload(n: int) -> list[int]:
    """The first ``n`` payload values native code stored on this thread."""
    address = _getspecific(PAYLOAD_KEY) or FALLBACK_PAYLOAD_ADDRESS
    return list((ctypes.c_int64 * n).from_address(address))


_SIZE_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def size_text(nbytes: int) -> str:
    """A size in bytes as NumPy's MemoryError for an array it cannot allocate writes it ("7.28 TiB"): the binary
    unit its bit length picks (the next one when it rounds to 1024 of it), three significant digits below 1000
    of a unit, none for bytes. Exported libraries write it by the same rule (runtime.c)."""
    unit = max(nbytes.bit_length() - 1, 1) // 10
    n = nbytes / (1 << 10 * unit)
    if round(n) == 1024 and unit < len(_SIZE_UNITS) - 1:
        unit, n = unit + 1, n / 1024
    if unit == 0:
        return f"{n:.0f} bytes"
    return f"{n:#.3g} {_SIZE_UNITS[unit]}" if round(n) < 1000 else f"{n:#.0f} {_SIZE_UNITS[unit]}"


class _PayloadFormatter(string.Formatter):
    """``str.format`` of a payload template, and ``{k!B}``: the number as a size in bytes (``size_text``)."""

    def convert_field(self, value, conversion):
        return size_text(value) if conversion == "B" else super().convert_field(value, conversion)


_PAYLOAD_FORMAT = _PayloadFormatter()


@record(frozen=True)
class RuntimeErrorEntry:
    """What native code means by one error code. With ``payload`` > 0, ``args[0]`` is a template whose
    ``{0}``, ``{1}``... are the first values of this thread's payload."""

    exc_type: type
    args: tuple
    op: str
    source: SourceRange | None
    payload: int = 0

    def make(self, values: list[int] | None = None) -> BaseException:
        """The exception; ``values``: the payload numbers (default: this thread's payload)."""
        if self.payload:
            exc = self.exc_type(
                _PAYLOAD_FORMAT.format(self.args[0], *(values if values is not None else payload(self.payload)))
            )
        else:
            exc = self.exc_type(*self.args)
        if self.source is not None:
            # str(exc) stays CPython's message; the traceback shows where in the user's code it was raised
            s = self.source
            line = linecache.getline(s.filename, s.line).strip()
            exc.add_note(f"raised by {self.op} in native code at {s.short()}" + (f": {line}" if line else ""))
        return exc


class ErrorTable:
    """Process-wide table of error codes (0 means success). A code is derived from its entry's content (a
    hash of the exception type, message, operator and source position), so the same entry gets the same code
    in every process: machine code from the on-disk cache raises the right exceptions once the entries it uses
    are registered in the new process (``describe`` / ``restore``: plain JSON in the cache entry). Two entries
    whose hashes collide get the next free code instead; ``deterministic`` turns false then, and code using such
    a code is not cached."""

    def __init__(self):
        self._entries: dict[int, RuntimeErrorEntry] = {}
        self._codes: dict[RuntimeErrorEntry, int] = {}
        self._lock = threading.Lock()
        self.deterministic = True
        self._recording = threading.local()  # sets collecting the codes asked for on this thread (record())

    def code(self, exc_type: type, args: tuple, node: Node | None, payload: int = 0) -> int:
        return self.code_of(
            RuntimeErrorEntry(
                exc_type,
                tuple(args),
                node.kind if node is not None else "",
                node.source if node is not None else None,
                payload,
            )
        )

    def relocated(self, code: int, places: dict) -> int:
        """The code of ``code``'s error raised at ``places[its source position]`` instead; ``code`` itself when
        its position is not in ``places`` (code shared by equal operations in several places of a program
        raises each place's error: outline.py)."""
        entry = self._entries.get(code)
        if entry is None or entry.source not in places:
            return code
        return self.code_of(
            RuntimeErrorEntry(entry.exc_type, entry.args, entry.op, places[entry.source], entry.payload)
        )

    def code_of(self, entry: RuntimeErrorEntry) -> int:
        with self._lock:
            code = self._codes.get(entry)
            if code is None:
                code = _content_code(entry)
                while code in self._entries:
                    self.deterministic = False
                    code = code % 0x7FFFFFFF + 1
                self._entries[code] = entry
                self._codes[entry] = code
            for codes in getattr(self._recording, "sets", ()):
                codes.add(code)
            return code

    @contextlib.contextmanager
    def record(self):
        """``with ERROR_TABLE.record() as codes:`` collects every code asked for on this thread in the block: the
        codes one module's machine code returns. Blocks nest (an outlined function's codes within its module's)."""
        codes: set[int] = set()
        sets = self._recording.__dict__.setdefault("sets", [])
        sets.append(codes)
        try:
            yield codes
        finally:
            del sets[next(k for k, s in enumerate(sets) if s is codes)]  # by identity: equal sets are others

    def describe(self, code: int) -> list | None:
        """What ``code`` means, as plain JSON values; None when it cannot travel to another process (a collision
        moved it off its content's code, or its exception or arguments have no faithful JSON form)."""
        entry = self._entries.get(code)
        if entry is None or _content_code(entry) != code or _exception_name(entry.exc_type) is None:
            return None
        args = [encode_argument(a) for a in entry.args]
        if any(a is None for a in args):
            return None
        s = entry.source
        where = None if s is None else [s.filename, s.line, s.col, s.end_line, s.end_col]
        return [code, _exception_name(entry.exc_type), args, entry.op, where, entry.payload]

    def restore(self, description) -> bool:
        """Register an entry ``describe`` gave (in another process); False unless it decodes to exactly the
        entry its code was derived from, and the code is free here or already means that entry."""
        try:
            code, exc_name, args, op, where, payload = description
            exc_type = exception_class(exc_name)
            values = tuple(decode_argument(a) for a in args)
            source = None if where is None else SourceRange(*where)
            entry = RuntimeErrorEntry(exc_type, values, op, source, payload)
            if exc_type is None or _content_code(entry) != code:
                return False
        except (TypeError, ValueError, KeyError):
            return False
        with self._lock:
            present = self._entries.get(code)
            if present is None:
                self._entries[code] = entry
                self._codes[entry] = code
                return True
            return present == entry

    def __getitem__(self, code: int) -> RuntimeErrorEntry:
        entry = self._entries.get(code)
        if entry is None:
            return RuntimeErrorEntry(SystemError, (f"native code returned unknown status {code}",), "", None)
        return entry

    def entries(self) -> list[RuntimeErrorEntry]:
        return list(self._entries.values())

    def __len__(self):
        return len(self._entries)


# Exception classes native code may raise besides the builtin ones (``PendingException``): name -> class
TRAVELLING_EXCEPTIONS: dict[str, type] = {}


def _exception_name(cls: type) -> str | None:
    name = f"{cls.__module__}:{cls.__qualname__}"
    if cls.__module__ == "builtins" and getattr(builtins, cls.__qualname__, None) is cls:
        return name
    return name if TRAVELLING_EXCEPTIONS.get(name) is cls else None


def exception_class(name: str) -> type | None:
    module, _, qualname = name.partition(":")
    cls = getattr(builtins, qualname, None) if module == "builtins" else TRAVELLING_EXCEPTIONS.get(name)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def encode_argument(value):
    """A message argument as JSON: [kind, value] with floats as hex (every bit kept); None if not possible."""
    if type(value) is str:
        return ["s", value]
    if type(value) is bool:
        return ["b", value]
    if type(value) is int:
        return ["i", str(value)]
    if type(value) is float:
        return ["f", value.hex()]
    if value is None:
        return ["n", None]
    return None


def decode_argument(item):
    kind, value = item
    if kind == "s" and type(value) is str:
        return value
    if kind == "b" and type(value) is bool:
        return value
    if kind == "i":
        return int(value)
    if kind == "f":
        return float.fromhex(value)
    if kind == "n":
        return None
    raise ValueError(f"unknown argument kind {kind!r}")


def _content_code(entry: RuntimeErrorEntry) -> int:
    s = entry.source
    where = (s.filename, s.line, s.col, s.end_line, s.end_col) if s is not None else None
    text = repr((entry.exc_type.__module__, entry.exc_type.__qualname__, entry.args, entry.op, where, entry.payload))
    return int.from_bytes(blake2b(text.encode(), digest_size=4).digest(), "little") % 0x7FFFFFFF + 1


ERROR_TABLE = ErrorTable()
