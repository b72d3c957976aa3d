"""The on-disk cache of machine code (``@scriptc.script(cache=True)``).

What is cached: the object file LLVM made for one optimized graph (lowering, the O3 pipeline and code generation
are most of a first call's time). What is not: the frontend and the pass pipeline still run on a hit, which
gives the graph the call needs, and lowering the graph again (without LLVM) registers in the new process what
the code refers to by name: error codes, print plans, str constants, counters (``common.process_global``).

The key is the content that determines the machine code, so a stale entry can never be found: the optimized
graph's text (it holds the inlined code of every scripted callee, from whatever file, and the values of the
global constants the function captured), the source files its nodes come from (error messages name them), the
options, the versions of scriptc, llvmlite and LLVM, and the target (triple, CPU name and features). Editing a
callee in another module, changing a global constant or upgrading scriptc changes the key: a miss.

An entry is ``MAGIC``, the length of a JSON header (8 bytes, little endian), the header, then the object file.
The header repeats the key and records the object's SHA-256; an entry that does not check out (truncated,
corrupt, another format) is ignored and rewritten. Nothing in an entry is executed or unpickled: the object
file is linked by the JIT exactly as a freshly compiled one. Writes go to a temporary file in the same
directory and are renamed into place, so that concurrent processes never read a torn entry.

Code that embeds a process address (module-level array constants) is not cached.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

FORMAT = 1
MAGIC = b"scriptc-cache\0"
SUFFIX = ".scc"
ABSOLUTE_ADDRESS = re.compile(r"inttoptr \(i64 -?\d{4,}")
stats = {"hits": 0, "misses": 0, "stores": 0, "rejected": 0}   # observable by tests and `scriptc cache`


def default_directory(source_file: str | None) -> Path:
    """``SCRIPTC_CACHE_DIR``, else ``__pycache__`` beside the source, else a per-user directory."""
    env = os.environ.get("SCRIPTC_CACHE_DIR")
    if env:
        return Path(env)
    if source_file:
        beside = Path(source_file).resolve().parent / "__pycache__"
        if os.access(beside if beside.exists() else beside.parent, os.W_OK):
            return beside
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "scriptc"


def target_description() -> dict:
    import llvmlite
    import llvmlite.binding as llvm
    from ... import __version__
    from .engine import engine
    eng = engine()
    return {"format": FORMAT, "scriptc": __version__, "llvmlite": llvmlite.__version__,
            "llvm": ".".join(map(str, llvm.llvm_version_info)), "triple": eng.triple, "cpu": eng.cpu,
            "features": eng.features}


def cache_key(graph_text: str, source_files: list[str], options: dict) -> str:
    content = json.dumps({"graph": graph_text, "files": sorted(set(source_files)), "options": options,
                          "target": target_description()}, sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()


class DiskCache:
    """The entries of one directory."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def path(self, name: str, key: str) -> Path:
        return self.directory / f"{re.sub(r'[^A-Za-z0-9_.]', '_', name)}-{key[:32]}{SUFFIX}"

    def load(self, name: str, key: str) -> bytes | None:
        """The object file of a valid entry for ``key``, or None (absent, unreadable, or not what it claims)."""
        try:
            data = self.path(name, key).read_bytes()
        except OSError:
            return None
        header = read_header(data)
        if header is None or header.get("key") != key:
            stats["rejected"] += header is None
            return None
        obj = data[header["_end"]:]
        if hashlib.sha256(obj).hexdigest() != header.get("sha256"):
            stats["rejected"] += 1
            return None
        return obj

    def store(self, name: str, key: str, obj: bytes, info: dict) -> None:
        header = json.dumps({"format": FORMAT, "key": key, "function": name, "sha256": hashlib.sha256(obj).hexdigest(),
                             "size": len(obj), **info}).encode()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=SUFFIX)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + len(header).to_bytes(8, "little") + header + obj)
                os.replace(tmp, self.path(name, key))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return      # a read-only or full disk costs a recompile next time, nothing else
        stats["stores"] += 1


def read_header(data: bytes) -> dict | None:
    """An entry's header (with ``_end``, the offset of the object file), or None if it is not a valid entry."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 8:
        return None
    n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8
    if start + n > len(data):
        return None
    try:
        header = json.loads(data[start:start + n])
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    header["_end"] = start + n
    return header if header.get("size") == len(data) - header["_end"] else None


def entries(directories) -> list[tuple[Path, dict | None]]:
    """Every cache entry under the directories (recursively): (path, header or None when invalid)."""
    found = []
    for d in directories:
        d = Path(d)
        if not d.exists():
            continue
        for path in sorted(d.rglob(f"*{SUFFIX}")):
            try:
                header = read_header(path.read_bytes())
            except OSError:
                header = None
            found.append((path, header))
    return found
