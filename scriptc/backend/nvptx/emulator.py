"""The grid emulator: a kernel module's very LLVM IR, compiled for the host CPU and run over the whole grid.

The special registers become globals of the host module (``%tid.x`` reads ``@scriptc.emu.tid.x``), and a driver
function generated beside each kernel walks the grid in order, block by block and thread by thread, setting
them and calling the kernel:

    void emulate_<kernel>(i32 blocks, i32 threads, <the kernel's parameters>)

Math calls go to the host's libm (the CPU backend's functions) instead of libdevice, so an emulated ``exp`` has
glibc's last bit where a GPU has libdevice's. The kernels generated so far are element-wise (no barriers,
shared memory or warp shuffles): running threads one after the other is exact for them.
"""
from __future__ import annotations

import ctypes
import re

from ..llvm.engine import LIBM_PREFIX, engine
from ..llvm.errors import PAYLOAD_SLOTS
from .codegen import KernelModule

REGISTERS = ("tid.x", "ntid.x", "ctaid.x", "nctaid.x")


def host_ir(km: KernelModule) -> str:
    """The kernel module's IR for the host: special registers as globals, libm under the CPU's names, and one
    grid driver per kernel."""
    text = str(km.mod.module)
    for reg in REGISTERS:
        intrinsic = re.escape(f'@"llvm.nvvm.read.ptx.sreg.{reg}"')
        text = re.sub(r"call i32 " + intrinsic + r"\(\)", f'load i32, i32* @"scriptc.emu.{reg}"', text)
        text = re.sub(r"declare i32 " + intrinsic + r"\(\)", f'@"scriptc.emu.{reg}" = internal global i32 0', text)
    text = re.sub(r"^!nvvm\.annotations.*$|^!\d+ = !\{.*\"kernel\".*$", "", text, flags=re.M)
    drivers = [driver(line) for line in text.splitlines() if line.startswith("define void @")]
    return text.replace('target triple = "nvptx64-nvidia-cuda"', "").replace(
        'target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"', "") + "\n" + "\n".join(drivers)


def driver(define_line: str) -> str:
    name = define_line.split("@", 1)[1].split("(", 1)[0].strip('"')
    params = [p.strip().rsplit(" ", 1)[0] for p in define_line.split("(", 1)[1].rsplit(")", 1)[0].split(",")]
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    passed = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    return f'''define void @"emulate_{name}"(i32 %blocks, i32 %threads, {args}) {{
entry:
  store i32 %blocks, i32* @"scriptc.emu.nctaid.x"
  store i32 %threads, i32* @"scriptc.emu.ntid.x"
  br label %block
block:
  %b = phi i32 [0, %entry], [%b1, %blockend]
  store i32 %b, i32* @"scriptc.emu.ctaid.x"
  br label %thread
thread:
  %t = phi i32 [0, %block], [%t1, %thread]
  store i32 %t, i32* @"scriptc.emu.tid.x"
  call void @"{name}"({passed})
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


class EmulatedModule:
    """A kernel module compiled for the host: ``launch(kernel, blocks, threads, *args)``."""

    def __init__(self, km: KernelModule):
        eng = engine()
        text = host_ir(km)
        self.llvm_ir = text
        names = [f"emulate_{k.name}" for k in km.kernels]
        addresses = eng.add_module(eng.optimize(text), names)
        self.error = ctypes.c_int32.from_address(eng._ee.get_global_value_address(km.error_symbol))
        self.payload = (ctypes.c_int64 * PAYLOAD_SLOTS).from_address(
            eng._ee.get_global_value_address(km.payload_symbol))
        self._drivers = {}
        for k in km.kernels:
            proto = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, *k.params)
            self._drivers[k.name] = proto(addresses[f"emulate_{k.name}"])

    def launch(self, kernel: str, blocks: int, threads: int, *args) -> None:
        self._drivers[kernel](blocks, threads, *args)

    def take_error(self) -> tuple[int, list[int]]:
        """The error code a kernel thread stored (0: none) and the payload, clearing the flag."""
        code = self.error.value
        self.error.value = 0
        return code, list(self.payload)


__all__ = ["EmulatedModule", "LIBM_PREFIX", "host_ir"]
