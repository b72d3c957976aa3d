"""Ctrl-C in native code: long-running loops see SIGINT while they run, not when they return.

A runtime module (compiled once per process, carried by the on-disk cache as ``runtimes.py`` carries the pool)
installs a SIGINT handler chained in front of the one Python installed: it sets ``scriptc.interrupt.flag`` and
calls Python's, which marks the signal pending as always. Native loops read the flag on their back-edges
(``loop_check``: a plain load, taken every few thousand iterations of an innermost loop, which runs in chunks
so that the vectorizer still sees a clean loop); when it is set, ``scriptc.interrupt.check`` runs, on Python's
main thread only (where Python runs signal handlers: the thread whose id is the process's), ``PyErr_CheckSignals``,
taking the GIL first if the code
runs without it. Python's handler for SIGINT then runs as it would between two bytecodes: the default one
raises KeyboardInterrupt, which native code unwinds with (freeing what it holds, as on any raise) and the
caller's entry point leaves set; a handler that returns lets the loop go on.

The chunks of a parallel loop (prange) run on worker threads that cannot call Python: they stop at the flag
(KeyboardInterrupt's error code), and the thread that started the loop then runs the check, so that Python's
handler runs once. A handler installed later with ``signal.signal`` replaces this one; ``watch_interrupts()``
(called before each compile) puts it back in front. Exported libraries and GPU kernels have no Python to call:
their loops do not look at the flag. Linux only (the layout of ``struct sigaction`` is glibc's).
"""

from __future__ import annotations

import ctypes
import sys
import threading

from llvmlite import ir

from . import parallel
from ..runtime import runtimes, symbols
from .common import I8P, I32, I64, i32, i64
from ..runtime.callbacks import PY_SYMBOLS
from ..runtime.engine import engine
from ..runtime.objload import link
from ..runtime.errors import ERROR_TABLE

FLAG = "scriptc.interrupt.flag"
CHECK = "scriptc.interrupt.check"
INSTALL = "scriptc.interrupt.install"
CHECK_SIGNALS = PY_SYMBOLS["check_signals"][0]  # bound by callbacks.py (no LLVM in cache loads)
CHUNK = 4096  # iterations of an innermost loop between two looks at the flag
SUPPORTED = sys.platform.startswith("linux")

SIGINT, SA_SIGINFO = 2, 4
SIGACTION_BYTES, FLAGS_OFFSET = 152, 136  # glibc's struct sigaction: handler, sa_mask[128], sa_flags, restorer

_LOCK = threading.Lock()
_RUNTIME: dict | None = None


def build_module() -> ir.Module:
    m = ir.Module(name="scriptc.interrupt")
    flag = ir.GlobalVariable(m, I32, FLAG)
    flag.initializer, flag.align = i32(0), 64
    prev_t = ir.ArrayType(ir.IntType(8), SIGACTION_BYTES)
    prev = ir.GlobalVariable(m, prev_t, "scriptc.interrupt.previous")
    prev.linkage, prev.initializer, prev.align = "internal", ir.Constant(prev_t, None), 16
    void = ir.VoidType()
    handler_t = ir.FunctionType(void, [I32, I8P, I8P])
    sigaction = ir.Function(m, ir.FunctionType(I32, [I32, I8P, I8P]), "sigaction")
    gettid = ir.Function(m, ir.FunctionType(I32, []), "gettid")
    getpid = ir.Function(m, ir.FunctionType(I32, []), "getpid")
    gil_ensure = ir.Function(m, ir.FunctionType(I32, []), "scriptc.py.gil_ensure")
    gil_release = ir.Function(m, ir.FunctionType(void, [I32]), "scriptc.py.gil_release")
    check_signals = ir.Function(m, ir.FunctionType(I32, []), CHECK_SIGNALS)

    def field(b, base, offset, ty):
        return b.bitcast(b.gep(b.bitcast(base, I8P), [i64(offset)]), ty.as_pointer())

    # the handler: set the flag, then whatever ran before (Python's)
    handler = ir.Function(m, handler_t, "scriptc.interrupt.handler")
    handler.linkage = "internal"
    sig, info, ctx = handler.args
    b = ir.IRBuilder(handler.append_basic_block("entry"))
    b.store_atomic(i32(1), flag, "seq_cst", 4)
    before = b.load(field(b, prev, 0, I8P))
    flags = b.load(field(b, prev, FLAGS_OFFSET, I32))
    with b.if_else(b.icmp_unsigned("!=", b.and_(flags, i32(SA_SIGINFO)), i32(0))) as (siginfo, plain):
        with siginfo:
            b.call(b.bitcast(before, handler_t.as_pointer()), [sig, info, ctx])
        with plain:
            with b.if_then(b.icmp_unsigned(">", b.ptrtoint(before, I64), i64(1))):  # not SIG_DFL, SIG_IGN
                b.call(b.bitcast(before, ir.FunctionType(void, [I32]).as_pointer()), [sig])
    b.ret_void()

    # install: in front of the current handler, unless there is none (SIG_DFL, SIG_IGN) or it is this one
    install = ir.Function(m, ir.FunctionType(I32, []), INSTALL)
    b = ir.IRBuilder(install.append_basic_block("entry"))
    cur = b.alloca(prev_t)
    b.call(sigaction, [i32(SIGINT), ir.Constant(I8P, None), b.bitcast(cur, I8P)])
    h = b.ptrtoint(b.load(field(b, cur, 0, I8P)), I64)
    mine = b.icmp_unsigned("==", h, b.ptrtoint(handler, I64))
    none = b.icmp_unsigned("<=", h, i64(1))
    with b.if_then(b.or_(mine, none)):
        b.ret(b.zext(mine, I32))
    b.store(b.load(cur), prev)
    b.store(b.bitcast(handler, I8P), field(b, cur, 0, I8P))
    f = field(b, cur, FLAGS_OFFSET, I32)
    b.store(b.or_(b.load(f), i32(SA_SIGINFO)), f)
    b.call(sigaction, [i32(SIGINT), b.bitcast(cur, I8P), ir.Constant(I8P, None)])
    b.ret(i32(1))

    # check(gil_held) -> 1 when Python's handler raised (the exception is set), else 0
    check = ir.Function(m, ir.FunctionType(I32, [I32]), CHECK)
    (held,) = check.args
    b = ir.IRBuilder(check.append_basic_block("entry"))
    with b.if_then(b.icmp_unsigned("!=", b.call(gettid, []), b.call(getpid, [])), likely=False):
        b.ret(i32(0))  # not the main thread (whose id is the process's): Python runs signal handlers there only
    was = b.atomic_rmw("xchg", flag, i32(0), "seq_cst")
    with b.if_then(b.icmp_unsigned("==", was, i32(0))):
        b.ret(i32(0))
    state = b.alloca(I32)
    with b.if_then(b.icmp_unsigned("==", held, i32(0))):
        b.store(b.call(gil_ensure, []), state)
    raised = b.call(check_signals, [])
    with b.if_then(b.icmp_unsigned("==", held, i32(0))):
        b.call(gil_release, [b.load(state)])
    b.ret(b.zext(b.icmp_signed("!=", raised, i32(0)), I32))
    return m


def ensure_runtime() -> None:
    """Compile (or find, when the on-disk cache linked it) the runtime once per process, and put its handler in
    front of Python's."""
    global _RUNTIME
    if _RUNTIME is not None or not SUPPORTED:
        return
    with _LOCK:
        if _RUNTIME is not None:
            return
        if symbols.bound(CHECK):  # linked from the on-disk cache (runtimes.py), its install run
            addresses = {name: symbols.bound(name) for name in (FLAG, CHECK, INSTALL)}
        else:
            eng = engine()
            llmod = eng.optimize(str(build_module()))
            obj = eng.emit_object(llmod)
            addresses = link(obj, [FLAG, CHECK, INSTALL], llmod)
            for name, address in addresses.items():
                symbols.bind(name, address)
            runtimes.register(obj, {name: name for name in (FLAG, CHECK, INSTALL)}, init=INSTALL)
        install = ctypes.CFUNCTYPE(ctypes.c_int32)(addresses[INSTALL])
        _RUNTIME = {"install": install}
        install()


@symbols.provider("scriptc.interrupt.")
def _runtime_symbol(name: str) -> int | None:
    ensure_runtime()  # compiles the runtime with LLVM, once per process
    return symbols.bound(name)


def watch_interrupts() -> bool:
    """Put scriptc's SIGINT handler in front of the current one (after ``signal.signal`` replaced it). True when
    native loops see Ctrl-C."""
    ensure_runtime()
    return bool(_RUNTIME and _RUNTIME["install"]())


# -- lowering -------------------------------------------------------------------------------------------------


class InterruptChecks:
    """The core of FunctionLowering: the looks at the flag that loops make."""

    def interrupt_flag(self):
        g = self.mod.module.globals.get(FLAG)
        if g is None:
            g = ir.GlobalVariable(self.mod.module, I32, FLAG)
        return g

    def check_interrupt(self) -> None:
        """If the flag is set: in a parallel kernel, stop with KeyboardInterrupt's code (the loop's caller runs
        the check); elsewhere run the check, and unwind when Python's handler raised."""
        b = self.b
        flag = b.load_atomic(self.interrupt_flag(), "monotonic", 4)  # (atomic: read on every pass)
        with b.if_then(b.icmp_unsigned("!=", flag, i32(0)), likely=False):
            if self.in_parallel_kernel:
                self.fail(self.interrupt_code())
            else:
                self.run_interrupt_check()

    def interrupt_budget(self):
        """The function's stack slot counting down the loop iterations left before the next look at the flag
        (LLVM keeps it in a register)."""
        b = self.b
        if getattr(self, "_interrupt_budget", None) is None:
            slot = self._interrupt_budget = self.alloca(I64)
            with b.goto_block(self.entry_block):
                b.position_after(slot)
                b.store(i64(CHUNK), slot)
        return self._interrupt_budget

    def interrupt_code(self) -> int:
        return ERROR_TABLE.code(KeyboardInterrupt, (), self.node)

    def run_interrupt_check(self) -> None:
        """Run Python's SIGINT handler now (on the main thread) and unwind when it raised (its exception is set;
        the entry point leaves it so); the code raises KeyboardInterrupt where nothing is set."""
        b = self.b
        check = parallel.mod_function(self, CHECK, ir.FunctionType(I32, [I32]))
        raised = b.call(check, [i32(0 if self.nogil else 1)])
        with b.if_then(b.icmp_unsigned("!=", raised, i32(0)), likely=False):
            self.fail(self.interrupt_code())

    @property
    def interruptible(self) -> bool:
        return SUPPORTED and not self.mod.target.standalone and not self.compiled_once


__all__ = ["CHUNK", "InterruptChecks", "ensure_runtime", "watch_interrupts"]


def at_most_one_chunk(trips) -> bool:
    """A trip count known to be at most ``interrupts.CHUNK``: a small constant, or the remainder of a division
    by one (the loop ``unroll`` leaves after an unrolled one)."""
    n = trips.node
    if n is None:
        return False
    if n.kind == "prim::Constant":
        return isinstance(n.attrs.get("value"), int) and n.attrs["value"] <= CHUNK
    if n.kind == "aten::remainder":
        d = n.inputs[1].node
        return (
            d is not None
            and d.kind == "prim::Constant"
            and isinstance(d.attrs.get("value"), int)
            and 0 < d.attrs["value"] <= CHUNK
        )
    return False


def is_unbounded_while(max_trips) -> bool:
    """The trip count the frontend gives ``while`` loops: the constant 2**63 - 1."""
    n = max_trips.node
    return n is not None and n.kind == "prim::Constant" and n.attrs.get("value") == 2**63 - 1
