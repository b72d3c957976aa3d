"""The grid emulator: a kernel module's very LLVM IR, compiled for the host CPU and run over the whole grid.

What is NVPTX-specific gets a host meaning (``host_ir``):

- the special registers (``tid.x``, ``ntid.x``, ``ctaid.x``, ``nctaid.x``) become four leading parameters of
  each kernel, passed by a driver generated beside it;
- shared memory (address space 3) becomes an ordinary global: blocks run one after the other, so one copy
  serves every block;
- the block barrier (``bar.sync``) becomes ``pthread_barrier_wait`` on a barrier of the block's size, and a warp
  shuffle (``shfl.sync.down``) a store to a lane array, a barrier, a load from the source lane and a barrier (the
  kernels shuffle in code every thread of the block runs);
- math calls go to the host's libm (the CPU backend's functions) instead of libdevice, so an emulated ``exp``
  has glibc's last bit where a GPU has libdevice's.

A kernel without barriers runs in one host thread, block by block and thread by thread:

    void emulate_<kernel>(i32 blocks, i32 threads, <the kernel's parameters>)

A kernel with barriers (the block reductions) runs one host thread per thread of a block, each walking every
block and meeting the others at each barrier and at the end of each block:

    void emulate_thread_<kernel>(i32 thread, i32 blocks, i32 threads, <the kernel's parameters>)
"""

from __future__ import annotations

import ctypes
import re
import threading

import llvmlite.binding as llvm

from ..llvm.runtime.engine import engine
from ..llvm.runtime.symbols import function_address, libm, provider
from ..llvm.runtime.errors import PAYLOAD_SLOTS
from .codegen import KernelModule
from .intrinsics import BARRIER_ASM
from .ptx import LIBDEVICE_PREFIX

REGISTERS = ("tid.x", "ntid.x", "ctaid.x", "nctaid.x")
_LIBC = ctypes.CDLL(None)
_LAUNCH = threading.Lock()  # one barrier state per module: threaded launches one at a time


def host_ir(km: KernelModule) -> str:
    """The kernel module's IR for the host, with one grid driver per kernel (see the module docstring)."""
    text = str(km.mod.module)
    for reg in REGISTERS:
        intrinsic = re.escape(f'@"llvm.nvvm.read.ptx.sreg.{reg}"')
        text = re.sub(r"call i32 " + intrinsic + r"\(\)", f'add i32 %"emu.{reg}", 0', text)
        text = re.sub(r"declare i32 " + intrinsic + r"\(\)", "", text)
    names = kernel_names(km)
    for name in names:
        registers = ", ".join(f'i32 %"emu.{reg}"' for reg in REGISTERS)
        text = text.replace(f'define void @"{name}"(', f'define void @"{name}"({registers}, ')
    text = text.replace(
        f'call void asm sideeffect "{BARRIER_ASM}", "~{{memory}}"()', 'call void @"scriptc.emu.barrier"()'
    )
    text = re.sub(
        r'call i32 @"llvm\.nvvm\.shfl\.sync\.down\.i32"\(i32 [^,]+, i32 ([^,]+), i32 ([^,]+), i32 [^)]+\)',
        r'call i32 @"scriptc.emu.shfl_down"(i32 %"emu.tid.x", i32 %"emu.ntid.x", i32 \1, i32 \2)',
        text,
    )
    text = re.sub(r'declare i32 @"llvm\.nvvm\.shfl\.sync\.down\.i32"\(.*\)', "", text)
    text = text.replace(" addrspace(3)", "").replace("addrspacecast", "bitcast")
    text = re.sub(r"^!nvvm\.annotations.*$|^!\d+ = !\{.*\"kernel\".*$", "", text, flags=re.M)
    text = text.replace('target triple = "nvptx64-nvidia-cuda"', "").replace(
        'target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"', ""
    )
    defines = {
        line.split("@", 1)[1].split("(", 1)[0].strip('"'): line
        for line in text.splitlines()
        if line.startswith("define void @")
    }
    barrier = f'''
@"{barrier_symbol(km)}" = global i8* null
declare i32 @"pthread_barrier_wait"(i8*)
define internal void @"scriptc.emu.barrier"() {{
  %state = load i8*, i8** @"{barrier_symbol(km)}"
  %r = call i32 @"pthread_barrier_wait"(i8* %state)
  ret void
}}
@"scriptc.emu.lanes" = internal global [1024 x i32] zeroinitializer
define internal i32 @"scriptc.emu.shfl_down"(i32 %tid, i32 %ntid, i32 %v, i32 %d) {{
  %mine = getelementptr [1024 x i32], [1024 x i32]* @"scriptc.emu.lanes", i32 0, i32 %tid
  store i32 %v, i32* %mine
  call void @"scriptc.emu.barrier"()
  %lane = and i32 %tid, 31
  %from_lane = add i32 %lane, %d
  %from = add i32 %tid, %d
  %in_warp = icmp ult i32 %from_lane, 32
  %exists = icmp ult i32 %from, %ntid
  %ok = and i1 %in_warp, %exists
  %source = select i1 %ok, i32 %from, i32 %tid
  %theirs = getelementptr [1024 x i32], [1024 x i32]* @"scriptc.emu.lanes", i32 0, i32 %source
  %r = load i32, i32* %theirs
  call void @"scriptc.emu.barrier"()
  ret i32 %r
}}
'''
    return text + barrier + "\n".join(driver(defines[name]) + threaded_driver(defines[name]) for name in names)


def kernel_names(km: KernelModule) -> list[str]:
    return [name for k in km.kernels for name in (k.name, k.finish) if name]


def barrier_symbol(km: KernelModule) -> str:
    return f"{km.prefix}_emu_barrier"


def _signature(define_line: str) -> tuple[str, list[str]]:
    name = define_line.split("@", 1)[1].split("(", 1)[0].strip('"')
    params = [
        p.strip().rsplit(" ", 1)[0].replace(" noalias", "")
        for p in define_line.split("(", 1)[1].rsplit(")", 1)[0].split(",")
    ]
    return name, params[len(REGISTERS) :]


def driver(define_line: str) -> str:
    name, params = _signature(define_line)
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    return f'''define void @"emulate_{name}"(i32 %blocks, i32 %threads, {args}) {{
entry:
  br label %block
block:
  %b = phi i32 [0, %entry], [%b1, %blockend]
  br label %thread
thread:
  %t = phi i32 [0, %block], [%t1, %thread]
  call void @"{name}"(i32 %t, i32 %threads, i32 %b, i32 %blocks, {args})
  %t1 = add i32 %t, 1
  %tmore = icmp slt i32 %t1, %threads
  br i1 %tmore, label %thread, label %blockend
blockend:
  %b1 = add i32 %b, 1
  %bmore = icmp slt i32 %b1, %blocks
  br i1 %bmore, label %block, label %done
done:
  ret void
}}
'''


def threaded_driver(define_line: str) -> str:
    name, params = _signature(define_line)
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    return f'''define void @"emulate_thread_{name}"(i32 %t, i32 %blocks, i32 %threads, {args}) {{
entry:
  br label %block
block:
  %b = phi i32 [0, %entry], [%b1, %block]
  call void @"{name}"(i32 %t, i32 %threads, i32 %b, i32 %blocks, {args})
  call void @"scriptc.emu.barrier"()
  %b1 = add i32 %b, 1
  %bmore = icmp slt i32 %b1, %blocks
  br i1 %bmore, label %block, label %done
done:
  ret void
}}
'''


class EmulatedModule:
    """A kernel module compiled for the host: ``launch(kernel, blocks, threads, args)``."""

    def __init__(self, km: KernelModule):
        eng = engine()
        llvm.add_symbol("pthread_barrier_wait", ctypes.cast(_LIBC.pthread_barrier_wait, ctypes.c_void_p).value)
        text = host_ir(km)
        self.llvm_ir = text
        entries = [
            (name, params)
            for k in km.kernels
            for name, params in ((k.name, k.params), (k.finish, k.finish_params))
            if name
        ]
        addresses = eng.add_module(
            eng.optimize(text), [f"emulate_{n}" for n, _ in entries] + [f"emulate_thread_{n}" for n, _ in entries]
        )
        address = eng._ee.get_global_value_address
        self.error = ctypes.c_int32.from_address(address(km.error_symbol))
        self.payload = (ctypes.c_int64 * PAYLOAD_SLOTS).from_address(address(km.payload_symbol))
        self.barrier = ctypes.c_void_p.from_address(address(barrier_symbol(km)))
        grid = ctypes.c_int32, ctypes.c_int32
        self._drivers = {n: ctypes.CFUNCTYPE(None, *grid, *p)(addresses[f"emulate_{n}"]) for n, p in entries}
        self._threaded = {
            n: ctypes.CFUNCTYPE(None, ctypes.c_int32, *grid, *p)(addresses[f"emulate_thread_{n}"]) for n, p in entries
        }
        self._uses_barriers = {k.name for k in km.kernels if k.uses_barriers} | {
            k.finish for k in km.kernels if k.finish
        }

    def launch(self, name: str, blocks: int, threads: int, args) -> None:
        if name not in self._uses_barriers:
            self._drivers[name](blocks, threads, *args)
            return
        run = self._threaded[name]
        with _LAUNCH:
            barrier = ctypes.create_string_buffer(128)  # a pthread_barrier_t (32 bytes on glibc)
            _LIBC.pthread_barrier_init(barrier, None, threads)
            self.barrier.value = ctypes.addressof(barrier)
            workers = [threading.Thread(target=run, args=(t, blocks, threads, *args)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            _LIBC.pthread_barrier_destroy(barrier)

    def take_error(self) -> tuple[int, list[int]]:
        """The error code a kernel thread stored (0: none) and the payload, clearing the flag."""
        code = self.error.value
        self.error.value = 0
        return code, list(self.payload)


@provider(LIBDEVICE_PREFIX)
def _libdevice_on_the_host(name: str) -> int | None:
    """libdevice's ``__nv_f`` in an emulated kernel: libm's ``f`` (libdevice's results are within its own ulp
    bounds of libm's, the emulator runs the host's)."""
    fn = getattr(libm(), name[len(LIBDEVICE_PREFIX) :], None)
    return function_address(fn) if fn is not None else None


__all__ = ["EmulatedModule", "host_ir"]
