"""Memory for the native code objload.py links: pages handed out from a few large reservations, so that the
number of mappings the kernel keeps for the process stays flat however many objects it links.

Why: each object had an mmap of its own, which mprotect split into code (r-x), read-only data (r--) and
writable data (rw-): 3.9 mappings per compiled function, measured. Linux caps a process at ``vm.max_map_count``
mappings (65,530 by default), which a process compiling ~17,000 functions would reach; past it, mmap and
mprotect fail, and LLVM's JIT aborts the process when its own mprotect fails.

A reservation is one inaccessible mapping of address space (nothing is committed until written) cut into three
arenas, one per kind of page: code, read-only data, writable data. Each arena hands out whole pages from its
start, made writable for the linker, then sealed to their final protection; neighbouring pages of one kind,
with one protection, are merged by the kernel into one mapping. The arenas lie within 2 GiB of each other, as
the small code model's PC-relative references between an object's code and its data need. When an arena is
full, a new reservation is made; an object too large for an empty arena gets a mapping of its own.
"""

from __future__ import annotations

import ctypes
import threading

PAGE = 4096
PROT_NONE, PROT_READ, PROT_WRITE, PROT_EXEC = 0, 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
ARENA = 128 << 20  # bytes of address space per kind of page and reservation
FINAL = (PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE)  # code, read-only data, writable data

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype, _mmap.argtypes = (
    ctypes.c_void_p,
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long],
)
_mprotect = _libc.mprotect
_mprotect.restype, _mprotect.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_LOCK = threading.Lock()
_cursors: list[int] = []  # the next free page of each arena of the current reservation
_ends: list[int] = []


def pages(size: int) -> int:
    """``size`` rounded up to whole pages."""
    return (size + PAGE - 1) // PAGE * PAGE


def allocate(sizes: tuple[int, int, int]) -> list[int]:
    """Writable, zeroed memory for an object's code, read-only data and writable data (bytes each): the start of
    each, page-aligned, within 2 GiB of one another. ``seal`` gives them their protection once linked."""
    wanted = [pages(size) for size in sizes]
    if any(size > ARENA for size in wanted):
        return _own_mapping(wanted)
    with _LOCK:
        if not _cursors or any(c + size > end for c, size, end in zip(_cursors, wanted, _ends)):
            _reserve()
        starts = list(_cursors)
        for k, size in enumerate(wanted):
            _cursors[k] += size
    for start, size in zip(starts, wanted):
        _protect(start, size, PROT_READ | PROT_WRITE)
    return starts


def seal(starts: list[int], sizes: tuple[int, int, int]) -> None:
    """Code read+execute, read-only data read-only (never writable and executable at once)."""
    for start, size, prot in zip(starts, sizes, FINAL):
        _protect(start, pages(size), prot)


def _reserve() -> None:
    base = _map(3 * ARENA, PROT_NONE, MAP_NORESERVE)
    _cursors[:] = [base + k * ARENA for k in range(3)]
    _ends[:] = [base + (k + 1) * ARENA for k in range(3)]


def _own_mapping(wanted: list[int]) -> list[int]:
    base = _map(max(sum(wanted), PAGE), PROT_READ | PROT_WRITE, 0)
    return [base, base + wanted[0], base + wanted[0] + wanted[1]]


def _map(size: int, prot: int, flags: int) -> int:
    base = _mmap(None, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        raise MemoryError(f"mmap of {size} bytes for native code failed (errno {ctypes.get_errno()})")
    return base


def _protect(start: int, size: int, prot: int) -> None:
    if size and _mprotect(start, size, prot) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of native code failed")
