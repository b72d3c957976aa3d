"""The on-disk cache of machine code (``@scriptc.script(cache=True)``).

What is cached: the object file LLVM made for one optimized graph (lowering, the O3 pipeline and code generation
are most of a first call's time), which holds the kernel, its C entry point and its CPython entry point, and
what the code refers to in the process by content (error codes, print plans, str constants), as JSON. A hit
links the object with ``objload`` and registers those: no lowering, no LLVM, llvmlite is not even imported
(``cached.py``). The frontend and the pass pipeline run only when the source key (``source_key.py``) misses:
they give the graph the key is made of.

The key is the content that determines the machine code, so a stale entry can never be found: the optimized
graph's text (it holds the inlined code of every scripted callee, from whatever file, and the values of the
global constants the function captured), the source files its nodes come from (error messages name them), the
options, the versions of scriptc, llvmlite, LLVM, Python and NumPy (the entry point reads CPython's and NumPy's
object layouts), and the target (triple, CPU name and features). Editing a callee in another module, changing a
global constant or upgrading scriptc changes the key: a miss. The LLVM half of the key (versions, CPU name and
features as LLVM sees them) is kept per machine in ``host-<fingerprint>.json``, so that a process can make keys
without loading LLVM: the fingerprint is the CPU's identity and flags (``/proc/cpuinfo``) and the installed
llvmlite library's size and modification time, so another CPU or another llvmlite never finds the file (and
computes the description with LLVM instead).

An entry is ``MAGIC``, the length of a JSON header (8 bytes, little endian), the header, then the object file.
The header repeats the key and records the object's SHA-256; an entry that does not check out (truncated,
corrupt, another format) is ignored and rewritten. Nothing in an entry is executed or unpickled: the object
file is linked exactly as a freshly compiled one, and the header's descriptions are checked to hash to the very
codes the machine code carries. Runtime code that entries share (the thread pool, summation kernels:
``runtimes.py``) is kept once, content-addressed, in ``runtime-<sha256>.sco``. A ``.scm`` file is a source key's
manifest (``source_key.py``): it lets a hit skip the frontend and the passes. Writes go to a temporary file in
the same directory and are renamed into place, so that concurrent processes never read a torn entry.

Code that embeds a process address (module-level array constants) is not cached.

Trust. Cached machine code is run: a file another user could have written is never used, as ssh refuses such
key files. A cache directory owned by another user (root excepted) or writable by group or others (777, even
1777) is not used at all, and an entry, manifest or runtime file owned by another user or writable by group or
others is not read: each gives a one-line ``CacheWarning`` (once per path), and the code is compiled instead.
Directories scriptc creates are 0755 (less under the umask), files 0600. This guards against other users of the
machine, not against the user's own processes (nor on Windows, which has no such modes).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from .digests import sha256

FORMAT = 2
MAGIC = b"scriptc-cache\0"
SUFFIX = ".scc"
RUNTIME_SUFFIX = ".sco"
MANIFEST_SUFFIX = ".scm"
ABSOLUTE_ADDRESS = re.compile(r"inttoptr \(?i64 -?\d{4,}")  # an address as an instruction or a constant
stats = {"hits": 0, "misses": 0, "stores": 0, "rejected": 0, "untrusted": 0}  # tests and `scriptc cache` read it
CHECKS_OWNERS = hasattr(os, "getuid")


class CacheWarning(UserWarning):
    """A cache directory or file another user could have written: not used."""


_WARNED: set[str] = set()


def _untrusted(st) -> str | None:
    """Why a directory or file with stat result ``st`` must not be trusted, or None."""
    if not CHECKS_OWNERS:
        return None
    if st.st_uid not in (os.getuid(), 0):
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"it is writable by other users (mode {st.st_mode & 0o7777:04o})"
    return None


def _refuse(path: Path, why: str, what: str) -> None:
    import warnings

    stats["untrusted"] += 1
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        fix = "chmod go-w it" if "writable" in why else "remove it"
        warnings.warn(
            f"scriptc: not using the cache {what} {path}: {why}; {fix}, or set SCRIPTC_CACHE_DIR to a "
            f"directory of your own",
            CacheWarning,
            stacklevel=3,
        )


def usable_directory(directory) -> bool:
    """The directory is absent (it will be made) or trusted; else a warning, and nothing is read or written."""
    try:
        why = _untrusted(os.stat(directory))
    except OSError:
        return True
    if why is not None:
        _refuse(Path(directory), why, "directory")
    return why is None


def read_trusted(path: Path) -> bytes | None:
    """The bytes of a cache file, or None when it is absent, unreadable or untrusted."""
    try:
        with open(path, "rb") as f:
            why = _untrusted(os.fstat(f.fileno()))
            if why is None:
                return f.read()
    except OSError:
        return None
    _refuse(path, why, "file")
    return None


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


def target_description(directory=None, llvm: bool = True) -> dict | None:
    """What the machine code depends on besides the graph: versions and target. Without ``llvm``, None when
    the LLVM half cannot be had without loading LLVM (no host file for this machine in ``directory`` yet)."""
    import numpy as np
    from .... import version  # (read when called: a test stands in another version)

    host = host_description(directory, llvm)
    if host is None:
        return None
    return {"format": FORMAT, "scriptc": version.__version__, "python": sys.version, "numpy": np.__version__, **host}


def _llvm_description() -> dict:
    import llvmlite
    import llvmlite.binding as llvm
    from .engine import engine  # only with no host description kept: a hit loads no engine

    eng = engine()
    return {
        "llvmlite": llvmlite.__version__,
        "llvm": ".".join(map(str, llvm.llvm_version_info)),
        "triple": eng.triple,
        "cpu": eng.cpu,
        "features": eng.features,
    }


def host_description(directory=None, llvm: bool = True) -> dict | None:
    """The LLVM half of the target description: from LLVM when it is loaded (or ``llvm`` allows loading it),
    else from the host file LLVM's answer was kept in on this machine."""
    fingerprint = host_fingerprint()
    path = (
        Path(directory) / f"host-{fingerprint[:32]}.json"
        if directory is not None and fingerprint and usable_directory(directory)
        else None
    )
    if path is not None and not engine_loaded():
        raw = read_trusted(path)
        try:
            kept = json.loads(raw) if raw is not None else None
            if isinstance(kept, dict) and kept.get("fingerprint") == fingerprint and isinstance(kept.get("host"), dict):
                return kept["host"]
        except ValueError:
            pass
    if not (llvm or engine_loaded()):
        return None
    host = _llvm_description()
    if path is not None:
        write_atomically(path, json.dumps({"fingerprint": fingerprint, "host": host}, sort_keys=True).encode())
    return host


def engine_loaded() -> bool:
    """Whether this process has started LLVM already (then asking it costs nothing)."""
    engine = sys.modules.get(f"{__package__}.engine")
    return engine is not None and engine._ENGINE is not None


_FINGERPRINT: list = []
_CPU_FIELDS = (
    b"vendor_id",
    b"cpu family",
    b"model",
    b"model name",
    b"stepping",
    b"flags",
    b"CPU implementer",
    b"CPU architecture",
    b"CPU variant",
    b"CPU part",
    b"Features",
)


def host_fingerprint() -> str | None:
    """This machine's CPU (identity and feature flags of its first processor) and installed llvmlite (its
    library's path, size and modification time), hashed; None where they cannot be read (not Linux)."""
    if _FINGERPRINT:
        return _FINGERPRINT[0]
    fingerprint = None
    try:
        import importlib.util

        with open("/proc/cpuinfo", "rb") as f:
            first = f.read(1 << 16).split(b"\n\n", 1)[0]
        cpu = sorted(line for line in first.splitlines() if line.split(b":")[0].strip() in _CPU_FIELDS)
        spec = importlib.util.find_spec("llvmlite")
        root = Path(spec.origin).parent
        libs = sorted((root / "binding").glob("*llvmlite*"))
        stats = [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in libs + [root / "_version.py"]]
        if cpu and libs:
            text = json.dumps([[c.decode("latin-1") for c in cpu], stats, sys.platform])
            fingerprint = sha256(text.encode()).hexdigest()
    except (OSError, AttributeError, TypeError, ImportError, ValueError):
        fingerprint = None
    _FINGERPRINT.append(fingerprint)
    return fingerprint


def cache_key(graph_text: str, source_files: list[str], options: dict, directory=None, llvm: bool = True) -> str | None:
    """The key of an entry; None when it cannot be made without LLVM (see ``target_description``)."""
    target = target_description(directory, llvm)
    if target is None:
        return None
    content = json.dumps(
        {"graph": graph_text, "files": sorted(set(source_files)), "options": options, "target": target}, sort_keys=True
    )
    return sha256(content.encode()).hexdigest()


def source_files(graph) -> list[str]:
    """The source files a graph's nodes come from (callees included): part of the key."""
    files = set()
    for g in [graph, *graph.subgraphs()]:
        for node in g.walk():
            if node.source is not None:
                files.add(node.source.filename)
    return sorted(files)


def write_atomically(path: Path, data: bytes) -> bool:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place (False on a read-only or
    full disk: a cache write failing costs a recompile next time, nothing else)."""
    import tempfile  # here: a hit, which writes nothing, need not import it

    try:
        path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


class DiskCache:
    """The entries of one directory."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def usable(self) -> bool:
        return usable_directory(self.directory)

    def path(self, name: str, key: str) -> Path:
        return self.directory / f"{re.sub(r'[^A-Za-z0-9_.]', '_', name)}-{key[:32]}{SUFFIX}"

    def load(self, name: str, key: str) -> tuple[dict, bytes] | None:
        """The header and object file of a valid entry for ``key``, or None (absent, unreadable, or not what it
        claims)."""
        data = read_trusted(self.path(name, key)) if self.usable() else None
        if data is None:
            return None
        header = read_header(data)
        if header is None or header.get("key") != key:
            stats["rejected"] += header is None
            return None
        obj = data[header["_end"] :]
        if sha256(obj).hexdigest() != header.get("sha256"):
            stats["rejected"] += 1
            return None
        return header, obj

    def store(self, name: str, key: str, obj: bytes, info: dict, runtimes=()) -> None:
        """Store an entry, and the runtime object files it needs that the directory lacks (``runtimes``:
        (sha256, object file) pairs)."""
        if not self.usable():
            return
        for sha, code in runtimes:
            if self.load_runtime(sha) is None:  # absent or damaged
                write_atomically(self.runtime_path(sha), code)
        header = json.dumps(
            {
                "format": FORMAT,
                "key": key,
                "function": name,
                "sha256": sha256(obj).hexdigest(),
                "size": len(obj),
                **info,
            }
        ).encode()
        if write_atomically(self.path(name, key), MAGIC + len(header).to_bytes(8, "little") + header + obj):
            stats["stores"] += 1

    def manifest_path(self, name: str, source_key: str) -> Path:
        return self.directory / f"{re.sub(r'[^A-Za-z0-9_.]', '_', name)}-{source_key[:32]}{MANIFEST_SUFFIX}"

    def load_manifest(self, name: str, source_key: str) -> dict | None:
        """The manifest of a source key (``source_key.py``): JSON, None if absent or not one."""
        raw = read_trusted(self.manifest_path(name, source_key)) if self.usable() else None
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        return data if isinstance(data, dict) and data.get("source_key") == source_key else None

    def store_manifest(self, name: str, source_key: str, manifest: dict) -> None:
        if self.usable():
            write_atomically(
                self.manifest_path(name, source_key),
                json.dumps({"source_key": source_key, **manifest}, sort_keys=True).encode(),
            )

    def runtime_path(self, sha: str) -> Path:
        return self.directory / f"runtime-{sha[:40]}{RUNTIME_SUFFIX}"

    def load_runtime(self, sha: str) -> bytes | None:
        """A runtime object file whose SHA-256 is ``sha`` (None if absent or not that)."""
        data = read_trusted(self.runtime_path(sha)) if self.usable() else None
        return data if data is not None and sha256(data).hexdigest() == sha else None


def read_header(data: bytes) -> dict | None:
    """An entry's header (with ``_end``, the offset of the object file), or None if it is not a valid entry."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 8:
        return None
    n = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8
    if start + n > len(data):
        return None
    try:
        header = json.loads(data[start : start + n])
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    header["_end"] = start + n
    return header if header.get("size") == len(data) - header["_end"] else None


def cache_directories(directories=None) -> list[Path]:
    """The directories ``scriptc cache`` looks in: each directory named, and every ``__pycache__`` below it;
    with none named, every ``__pycache__`` below the current directory. Nothing else: a file elsewhere that
    merely has a cache entry's suffix (a Scheme source's ``.scm``) is not the cache's."""
    found = [Path(d) for d in directories or () if Path(d).is_dir()]
    for root in [Path(d) for d in directories or ()] or [Path(".")]:
        if root.is_dir():
            found += sorted(p for p in root.rglob("__pycache__") if p.is_dir())
    return list(dict.fromkeys(p.resolve() for p in found))


_OUR_NAMES = re.compile(
    rf"(.+-[0-9a-f]{{32}}({re.escape(SUFFIX)}|{re.escape(MANIFEST_SUFFIX)})"
    rf"|runtime-[0-9a-f]{{40}}{re.escape(RUNTIME_SUFFIX)}|host-[0-9a-f]{{1,32}}\.json)"
)


def written_by_scriptc(path: Path) -> bool:
    """Whether a file in a cache directory is one scriptc wrote, by its name and its first bytes: ``--clear`` of
    a directory named on the command line leaves a Scheme source (``.scm``), a Visual SourceSafe ``.scc`` or any
    other JSON alone."""
    if not _OUR_NAMES.fullmatch(path.name):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
    except OSError:
        return False
    if path.suffix == SUFFIX:
        return MAGIC.startswith(head)  # (an entry cut short is still ours, to rewrite or remove)
    if path.suffix == RUNTIME_SUFFIX:
        return head.startswith(b"\x7fELF")
    return head.startswith(b"{")  # a manifest's or host description's JSON (names matched above)


def side_files(directories=None) -> list[Path]:
    """The runtime object files, host descriptions and source-key manifests in the cache's directories
    (``scriptc cache --clear``)."""
    found = []
    for d in cache_directories(directories):
        found += (
            sorted(d.glob(f"runtime-*{RUNTIME_SUFFIX}"))
            + sorted(d.glob("host-*.json"))
            + sorted(d.glob(f"*{MANIFEST_SUFFIX}"))
        )
    return [path for path in found if written_by_scriptc(path)]


def entries(directories=None) -> list[tuple[Path, dict | None]]:
    """Every cache entry in the cache's directories (``cache_directories``): (path, header or None when
    invalid)."""
    found = []
    for d in cache_directories(directories):
        for path in sorted(d.glob(f"*{SUFFIX}")):
            if not written_by_scriptc(path):
                continue
            try:
                header = read_header(path.read_bytes())
            except OSError:
                header = None
            found.append((path, header))
    return found
