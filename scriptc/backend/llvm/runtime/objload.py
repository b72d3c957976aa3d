"""Loading an object file LLVM emitted into this process, without LLVM: a small static linker for one ELF64
x86-64 relocatable object.

Why: code from the on-disk cache must run without importing llvmlite (loading LLVM costs a warm first call
30-45 ms, more than everything else together). The object is what the JIT would link: its sections are copied
into memory of our own (pages from code_memory.py, never unmapped, like the JIT's), its relocations applied,
its undefined symbols resolved by a function the caller gives (``symbols.address_of``: what scriptc binds by
name, then the process's libraries), and its defined symbols returned by name.

Handled: allocated sections (code, read-only data, writable data, zeroed data; ``.eh_frame`` is skipped: nothing
unwinds through generated code), the relocations LLVM's large code model emits (``R_X86_64_64``, ``PC64``) and
those of the small one (``PC32``/``PLT32``, through a stub when the target is more than 2 GiB away, and the
``GOTPCREL`` family, through slots of our own, for undefined and defined symbols alike). Anything else (TLS,
constructors, other relocations, another machine or format) raises ``ObjectLoadError``, and the caller links
through the JIT instead. Code is read+execute and data read-only or read+write once relocated, never writable
and executable at once.
"""

from __future__ import annotations

import ctypes
import struct
import sys

from . import code_memory, symbols

SHT_PROGBITS, SHT_SYMTAB, SHT_NOBITS, SHT_RELA, SHT_REL = 1, 2, 8, 4, 9
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
SHT_X86_64_UNWIND = 0x70000001
STB_LOCAL = 0

R_X86_64_NONE, R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32 = 0, 1, 2, 4
R_X86_64_GOTPCREL, R_X86_64_PC64, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX = 9, 24, 41, 42
GOT_RELOCATIONS = (R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX)

STUB = b"\xff\x25\x00\x00\x00\x00"  # jmp *0(%rip), followed by the 8-byte target


class ObjectLoadError(Exception):
    """The object cannot be loaded by this linker (another format, or something it does not handle)."""


SUPPORTED = sys.platform.startswith("linux") and sys.byteorder == "little" and ctypes.sizeof(ctypes.c_void_p) == 8


def _round(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class _Section:
    __slots__ = ("index", "name", "kind", "flags", "offset", "size", "align", "link", "info", "entsize", "address")

    def __init__(self, index, name, kind, flags, offset, size, align, link, info, entsize):
        self.index, self.name, self.kind, self.flags = index, name, kind, flags
        self.offset, self.size, self.align = offset, size, max(align, 1)
        self.link, self.info, self.entsize = link, info, entsize
        self.address = 0

    @property
    def region(self) -> int:
        """0: code, 1: read-only data, 2: writable data."""
        return 0 if self.flags & SHF_EXECINSTR else 2 if self.flags & SHF_WRITE else 1


def _sections(obj: bytes) -> list[_Section]:
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ObjectLoadError("not an ELF64 little-endian object")
    e_type, e_machine = struct.unpack_from("<HH", obj, 16)
    if e_type != 1 or e_machine != 62:
        raise ObjectLoadError(f"not an x86-64 relocatable object (type {e_type}, machine {e_machine})")
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    names = raw[shstrndx][4]
    out = []
    for k, (name_at, kind, flags, _, offset, size, link, info, align, entsize) in enumerate(raw):
        name = obj[names + name_at : obj.index(b"\0", names + name_at)].decode()
        out.append(_Section(k, name, kind, flags, offset, size, align, link, info, entsize))
    return out


def _symbols(obj: bytes, symtab: _Section, sections: list[_Section]) -> list[tuple]:
    """(name, bind, section index, value) per symbol-table entry."""
    strtab = sections[symtab.link].offset
    out = []
    for off in range(symtab.offset, symtab.offset + symtab.size, symtab.entsize):
        name_at, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", obj, off)
        name = obj[strtab + name_at : obj.index(b"\0", strtab + name_at)].decode() if name_at else ""
        out.append((name, info >> 4, shndx, value))
    return out


def load_object(obj: bytes, resolve) -> dict[str, int]:
    """Link ``obj`` into this process. ``resolve(name) -> address or None`` gives undefined symbols; returns the
    address of every global symbol the object defines. Raises ObjectLoadError (nothing is then executed)."""
    if not SUPPORTED:
        raise ObjectLoadError("this linker handles x86-64 Linux only")
    try:
        return _load(obj, resolve)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as e:
        raise ObjectLoadError(f"damaged object file ({e})") from None


def _load(obj: bytes, resolve) -> dict[str, int]:
    sections = _sections(obj)
    symtabs = [s for s in sections if s.kind == SHT_SYMTAB]
    if len(symtabs) != 1:
        raise ObjectLoadError("expected one symbol table")
    loaded = [
        s for s in sections if s.flags & SHF_ALLOC and s.kind != SHT_X86_64_UNWIND and s.size and s.name != ".eh_frame"
    ]
    for s in loaded:
        if (
            s.flags & SHF_TLS
            or s.kind not in (SHT_PROGBITS, SHT_NOBITS)
            or s.name.startswith((".init", ".fini", ".ctors", ".dtors"))
        ):
            raise ObjectLoadError(f"section {s.name} is not supported")
    by_index = {s.index: s for s in loaded}
    relocations = []
    for s in sections:
        if s.kind == SHT_REL:
            raise ObjectLoadError("REL relocations are not supported")
        if s.kind == SHT_RELA and s.info in by_index:
            relocations.append((s, by_index[s.info]))
    symbols = _symbols(obj, symtabs[0], sections)

    external: dict[str, int] = {}
    got_defined: list[int] = []  # symbols the object defines and reads through the GOT (position-independent
    # code reaches what it exports that way: a first-tier module's functions, whose names another module may bind)
    for rel, _ in relocations:
        for off in range(rel.offset, rel.offset + rel.size, rel.entsize):
            _, info, _ = struct.unpack_from("<QQq", obj, off)
            name, _, shndx, _ = symbols[info >> 32]
            if shndx == SHN_COMMON:
                raise ObjectLoadError(f"common symbol {name} is not supported")
            if shndx == SHN_UNDEF and name and name not in external:
                address = resolve(name)
                if not address:
                    raise ObjectLoadError(f"undefined symbol {name}")
                external[name] = address
            elif shndx != SHN_UNDEF and info & 0xFFFFFFFF in GOT_RELOCATIONS and info >> 32 not in got_defined:
                got_defined.append(info >> 32)
    names = sorted(external)
    # layout: code (with one stub per external symbol), read-only data, writable data (with one GOT slot per
    # external symbol, then one per defined symbol read through the GOT), each region on its own pages
    offsets, sizes = {}, [0, 0, 0]
    for s in loaded:
        r = s.region
        sizes[r] = _round(sizes[r], s.align)
        offsets[s.index] = sizes[r]
        sizes[r] += s.size
    stubs_at = sizes[0] = _round(sizes[0], 16)
    sizes[0] += 16 * len(names)
    got_at = sizes[2] = _round(sizes[2], 8)
    sizes[2] += 8 * (len(names) + len(got_defined))
    starts = code_memory.allocate((sizes[0], sizes[1], sizes[2]))
    for s in loaded:
        s.address = starts[s.region] + offsets[s.index]
        if s.kind == SHT_PROGBITS:
            ctypes.memmove(s.address, obj[s.offset : s.offset + s.size], s.size)
    stub = {n: starts[0] + stubs_at + 16 * k for k, n in enumerate(names)}
    got = {n: starts[2] + got_at + 8 * k for k, n in enumerate(names)}
    for n in names:
        ctypes.memmove(stub[n], STUB + struct.pack("<Q", external[n]), len(STUB) + 8)
        ctypes.c_uint64.from_address(got[n]).value = external[n]
    got_of_defined = {index: starts[2] + got_at + 8 * (len(names) + k) for k, index in enumerate(got_defined)}

    def value_of(index: int) -> int:
        name, _, shndx, value = symbols[index]
        if shndx == SHN_UNDEF:
            return external[name]
        if shndx == SHN_ABS:
            return value
        target = by_index.get(shndx)
        if target is None:
            raise ObjectLoadError(f"symbol {name or index} is in a section that is not loaded")
        return target.address + value

    for index, slot in got_of_defined.items():
        ctypes.c_uint64.from_address(slot).value = value_of(index)
    for rel, target in relocations:
        for off in range(rel.offset, rel.offset + rel.size, rel.entsize):
            where, info, addend = struct.unpack_from("<QQq", obj, off)
            kind, index = info & 0xFFFFFFFF, info >> 32
            if where + 8 > target.size and kind in (R_X86_64_64, R_X86_64_PC64) or where + 4 > target.size:
                raise ObjectLoadError("relocation outside its section")
            p = target.address + where
            if kind == R_X86_64_NONE:
                continue
            if kind == R_X86_64_64:
                struct.pack_into("<Q", (ctypes.c_char * 8).from_address(p), 0, (value_of(index) + addend) % 2**64)
            elif kind == R_X86_64_PC64:
                struct.pack_into("<q", (ctypes.c_char * 8).from_address(p), 0, value_of(index) + addend - p)
            elif kind in (R_X86_64_PC32, R_X86_64_PLT32):
                s = value_of(index)
                name, _, shndx, _ = symbols[index]
                if not -(2**31) <= s + addend - p < 2**31 and shndx == SHN_UNDEF and kind == R_X86_64_PLT32:
                    s = stub[name]
                _put32(p, s + addend - p)
            elif kind in GOT_RELOCATIONS:
                name, _, shndx, _ = symbols[index]
                _put32(p, (got[name] if shndx == SHN_UNDEF else got_of_defined[index]) + addend - p)
            else:
                raise ObjectLoadError(f"relocation type {kind} is not supported")
    code_memory.seal(starts, (sizes[0], sizes[1], sizes[2]))
    return {
        name: value_of(k)
        for k, (name, bind, shndx, _) in enumerate(symbols)
        if bind != STB_LOCAL and name and shndx != SHN_UNDEF
    }


def link(obj: bytes, wanted: list[str], llmod=None) -> dict[str, int]:
    """Link ``obj`` into this process, resolving names through ``symbols.address_of``; the addresses of the
    ``wanted`` symbols. What this linker declines (another machine, a relocation it does not handle), LLVM's JIT
    links (loading LLVM if it is not loaded); its ``LinkError`` (an ObjectLoadError) says what nothing
    provides."""
    try:
        found = load_object(obj, symbols.address_of)
    except ObjectLoadError:
        from .engine import engine  # (cycle: engine imports this module); LLVM only where this linker declines

        return engine().add_object(obj, wanted, llmod)
    return {name: found[name] for name in wanted}


def _put32(p: int, value: int) -> None:
    if not -(2**31) <= value < 2**31:
        raise ObjectLoadError("a 32-bit relocation is out of range")
    struct.pack_into("<i", (ctypes.c_char * 4).from_address(p), 0, value)


def undefined_symbols(obj: bytes) -> list[str]:
    """The symbols an object leaves undefined (without loading it)."""
    try:
        sections = _sections(obj)
        symtab = next(s for s in sections if s.kind == SHT_SYMTAB)
        return [n for n, _, shndx, _ in _symbols(obj, symtab, sections) if n and shndx == SHN_UNDEF]
    except (struct.error, IndexError, ValueError, UnicodeDecodeError, StopIteration) as e:
        raise ObjectLoadError(f"damaged object file ({e})") from None
