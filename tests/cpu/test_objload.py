"""objload: linking an LLVM object file into the process without LLVM (what the on-disk cache's hits use).
The same code must run linked by objload as by the JIT; anything the loader does not handle is an
ObjectLoadError (the caller then uses the JIT), never a crash."""

import ctypes
import struct

import llvmlite.binding as llvm
import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime import objload, symbols
from scriptc.backend.llvm.compile import Lowered
from scriptc.backend.llvm.runtime.engine import engine
from scriptc.backend.llvm.runtime.native import NativeFunction

pytestmark = pytest.mark.skipif(not objload.SUPPORTED, reason="objload links x86-64 Linux objects only")


@scriptc.script
def kernel(x: np.ndarray, k: int) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * k + x[-1 - i]
    print("done", k)
    return out


def object_file(fn, *args):
    graph = fn.graph_for_types(fn._bind(args, {})[0])
    lowered = Lowered(graph, f"scriptc.objtest{id(args)}", False, False, False, {})
    eng = engine()
    return graph, lowered.entry, eng.emit_object(eng.optimize(lowered.text))


def test_code_linked_by_objload_runs_as_the_jit_runs_it(capfd):
    x = np.linspace(-1.0, 2.0, 7)
    graph, entry, obj = object_file(kernel, x, 3)
    found = objload.load_object(obj, symbols.address_of)
    assert set(found) >= {entry}
    native = NativeFunction(graph, None, entry, found[entry], None)
    np.testing.assert_array_equal(native(x, 3), kernel.py_func(x, 3))
    assert capfd.readouterr().out == "done 3\ndone 3\n"


@scriptc.script
def pick(x: np.ndarray, i: int) -> float:
    return x[i] * 2.0


def test_errors_of_objload_linked_code_are_cpythons():
    x = np.arange(4.0)
    graph, entry, obj = object_file(pick, x, 1)
    native = NativeFunction(graph, None, entry, objload.load_object(obj, symbols.address_of)[entry], None)
    assert native(x, -1) == 6.0
    with pytest.raises(IndexError, match="^index 9 is out of bounds for axis 0 with size 4"):
        native(x, 9)


def test_objload_refuses_what_it_cannot_link():
    _, _, obj = object_file(kernel, np.zeros(3), 1)
    with pytest.raises(objload.ObjectLoadError, match="undefined symbol"):
        objload.load_object(obj, lambda name: None)
    for damaged in (b"", b"not an object", obj[:64], b"\x7fELF" + b"\x01" * 60):
        with pytest.raises(objload.ObjectLoadError):
            objload.load_object(damaged, symbols.address_of)


def test_position_independent_code_reads_what_it_defines_through_the_got():
    """The first tier's modules are position-independent (engine._machine(0)): code taking the address of a
    function the module exports reads it from the GOT, a relocation against a defined symbol. objload gives it
    a slot of its own (it declined such modules, which LLVM's JIT then linked, a mapping of its own each)."""
    eng = engine()
    text = (
        f'target triple = "{eng.triple}"\n'
        'define i64 @"scriptc.objtest.twice"(i64 %x) {\n  %y = mul i64 %x, 2\n  ret i64 %y\n}\n'
        'define ptr @"scriptc.objtest.address"() {\n  ret ptr @"scriptc.objtest.twice"\n}\n'
    )
    obj = eng._machine(0).emit_object(llvm.parse_assembly(text))
    assert any(kind in objload.GOT_RELOCATIONS for kind in relocation_kinds(obj))
    found = objload.load_object(obj, symbols.address_of)
    address = ctypes.CFUNCTYPE(ctypes.c_void_p)(found["scriptc.objtest.address"])()
    assert address == found["scriptc.objtest.twice"]
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(21) == 42


def relocation_kinds(obj: bytes) -> list[int]:
    """The relocation types of an ELF64 object's RELA sections."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    kinds = []
    for k in range(shnum):
        _, kind, _, _, offset, size, _, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize)
        if kind == objload.SHT_RELA:
            kinds += [struct.unpack_from("<QQq", obj, offset + j)[1] & 0xFFFFFFFF for j in range(0, size, entsize)]
    return kinds


def test_an_object_with_no_code_or_data_links():
    """An object of declarations only takes no memory and still links (to no symbols)."""
    eng = engine()
    obj = eng.emit_object(eng.optimize('declare double @"sin"(double)\n'))
    assert objload.load_object(obj, symbols.address_of) == {}


def test_unknown_relocations_are_refused():
    _, _, obj = object_file(kernel, np.zeros(3), 1)
    data = bytearray(obj)
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for k in range(shnum):
        (kind,) = struct.unpack_from("<I", data, shoff + k * shentsize + 4)
        offset, size = struct.unpack_from("<QQ", data, shoff + k * shentsize + 24)
        if kind == objload.SHT_RELA and size:
            (info,) = struct.unpack_from("<Q", data, offset + 8)
            struct.pack_into("<Q", data, offset + 8, (info & ~0xFFFFFFFF) | 37)  # R_X86_64_SIZE64
            break
    else:
        pytest.skip("no relocations")
    with pytest.raises(objload.ObjectLoadError, match="relocation type 37"):
        objload.load_object(bytes(data), symbols.address_of)


def test_code_is_not_writable_once_linked():
    graph, entry, obj = object_file(kernel, np.zeros(3), 1)
    address = objload.load_object(obj, symbols.address_of)[entry]
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= address < hi:
                assert line.split()[1].startswith("r-x"), line
                break
        else:
            pytest.fail("code address not mapped")
    assert ctypes.c_uint8.from_address(address).value != 0


def mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def test_linking_many_objects_keeps_the_mappings_flat():
    """Linux caps a process's mappings (vm.max_map_count, 65,530 by default): an mmap per object, split in three
    by its protections, reached it after ~17,000 compiled functions. Pages come from shared arenas instead."""
    _, _, obj = object_file(kernel, np.zeros(3), 1)
    objload.load_object(obj, symbols.address_of)
    before = mappings()
    for _ in range(300):
        objload.load_object(obj, symbols.address_of)
    assert mappings() - before <= 6, "300 objects should share a few mappings (a new reservation: 3 at most)"


def test_arenas_spill_into_a_new_reservation_and_large_objects_map_their_own(monkeypatch):
    """An arena that is full starts a new reservation; an object larger than an arena gets a mapping of its own;
    either way the code runs and is read+execute only."""
    from scriptc.backend.llvm.runtime import code_memory

    x = np.linspace(-1.0, 2.0, 7)
    graph, entry, obj = object_file(kernel, x, 3)
    code_size = next(s.size for s in objload._sections(obj) if s.flags & objload.SHF_EXECINSTR and s.size)
    monkeypatch.setattr(code_memory, "ARENA", 3 * code_memory.pages(code_size))
    monkeypatch.setattr(code_memory, "_cursors", [])
    monkeypatch.setattr(code_memory, "_ends", [])
    addresses, reservations = [], set()
    for _ in range(5):
        addresses.append(objload.load_object(obj, symbols.address_of)[entry])
        reservations.add(tuple(code_memory._ends))
    assert len(reservations) >= 2
    monkeypatch.setattr(code_memory, "ARENA", 0)  # every object is larger
    addresses.append(objload.load_object(obj, symbols.address_of)[entry])
    assert tuple(code_memory._ends) in reservations, "an object of its own should leave the arenas as they are"
    assert len(set(addresses)) == 6
    for address in addresses:
        np.testing.assert_array_equal(NativeFunction(graph, None, entry, address, None)(x, 3), kernel.py_func(x, 3))
