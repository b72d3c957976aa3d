"""scriptc's thread pool: native worker threads that run the chunks of parallel loops (prange, large fusion groups).

Why our own pool and not OpenMP's (libgomp's ``GOMP_parallel``): libgomp is not always present (not on macOS,
not in every wheel-only environment) and cannot be assumed by a pure-Python package; a second code path for when
it is would double what must be tested; and its default spinning (``GOMP_SPINCOUNT``) burns cores that a
machine shared with NumPy/OpenBLAS threads needs. The pool is small: one LLVM module, built with llvmlite and
JIT-compiled once per process on first use, calling only the C library (pthreads).

Protocol. ``scriptc.pool.run(fn, ctx, n)`` runs ``fn(ctx, c)`` for every chunk ``c`` in ``0 <= c < n`` and
returns when all have finished. The caller runs chunks too; chunks are claimed from a shared counter, so a worker
that is slow to wake (a loaded machine) never holds a region up: whoever is free takes the next chunk. Results
do not depend on which thread ran which chunk (each chunk writes its own slots), so they are deterministic for a
given chunk count. The claim counter holds the region's generation in its high 32 bits and the next chunk in its
low 32 bits and is advanced only by compare-and-swap, so a worker still holding a previous region's job can never
claim (or run) a chunk of the next one. Workers spin briefly (about ``SPIN`` loads) after a region before
sleeping on a condition variable; a region's last chunk wakes the caller if it sleeps.

Workers are created lazily by the first region that wants them (``threads - 1`` of them, ``threads`` read from
``scriptc.pool.threads`` at each region), never exit, and hold no Python thread state. A region started while
the pool is busy (a prange loop inside a parallel region, or two Python threads in nogil code at once) runs all
its chunks on the calling thread: same chunks, same results. After ``fork`` the child starts with no workers.

An exported library (``scriptc export``) compiles this module into itself, with ``run`` named
``scriptc.pool.run`` and hidden: each library has its own pool (its own workers and busy flag, so a region in one
library does not see another's as busy), its own ``scriptc.pool.threads`` (export/pool.c: SCRIPTC_NUM_THREADS,
else the CPUs, read at load), and resets it when loaded and in a forked child (pthread_atfork). The same
assumptions hold there: chunk code never touches Python (exported code has no GIL calls) and a nested region runs
serially.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from llvmlite import ir

from . import runtimes, symbols
from .llvm_types import I8P, I32, I64, i32, i64
from .engine import engine
from .objload import link
from .threads import THREADS, THREADS_SYMBOL, default_threads, get_threads, set_threads  # noqa: F401
from .text_builder import TextBuilder

MAX_THREADS = 64  # chunks (and threads) one region uses at most
SPIN = 20000  # loads of the generation a worker makes before sleeping (about 10-40 us)
SYNC_BYTES = 64  # room for a pthread_mutex_t or pthread_cond_t (40/48 bytes on Linux, 64/48 on macOS)
RUN_SYMBOL = "scriptc.pool.run"
VOID = ir.VoidType()
CHUNK_FN = ir.FunctionType(VOID, [I8P, I64])

_LOCK = threading.Lock()
_RUNTIME: dict | None = None


def ensure_runtime() -> None:
    """Compile the pool once per process and bind its symbols into the JIT (before code calling it links)."""
    global _RUNTIME
    if _RUNTIME is not None:
        return
    with _LOCK:
        if _RUNTIME is not None:
            return
        get_threads()
        if symbols.bound(RUN_SYMBOL):  # linked from the on-disk cache (runtimes.py) before any compile
            _RUNTIME = {"scriptc.pool.run.impl": symbols.bound(RUN_SYMBOL)}
            return

        eng = engine()
        llmod = eng.optimize(str(build_module()))
        obj = eng.emit_object(llmod)
        wanted = ["scriptc.pool.run.impl", "scriptc.pool.reset"]
        addresses = link(obj, wanted, llmod)
        symbols.bind(RUN_SYMBOL, addresses["scriptc.pool.run.impl"])
        runtimes.register(obj, {RUN_SYMBOL: "scriptc.pool.run.impl"}, init="scriptc.pool.reset")
        reset = ctypes.CFUNCTYPE(None)(addresses["scriptc.pool.reset"])
        reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=reset)  # the child has no workers: start over
        _RUNTIME = {"reset": reset, **addresses}


class _Builder:
    """The pool module: globals, the pthread declarations, the worker and ``run``."""

    def __init__(self):
        self.m = ir.Module(name="scriptc.pool")
        m = self.m
        sync = ir.ArrayType(ir.IntType(8), SYNC_BYTES)

        def glob(name, ty, init):
            g = ir.GlobalVariable(m, ty, f"scriptc.pool.{name}")
            g.linkage, g.initializer, g.align = "internal", init, 64
            return g

        zero_sync = ir.Constant(sync, None)
        self.mutex, self.work, self.done = (glob(n, sync, zero_sync) for n in ("mutex", "work", "done"))
        self.generation = glob("generation", I64, i64(0))
        self.claim = glob("claim", I64, i64(0))  # generation << 32 | next chunk
        self.remaining = glob("remaining", I64, i64(0))
        self.job_fn = glob("job_fn", I8P, ir.Constant(I8P, None))
        self.job_ctx = glob("job_ctx", I8P, ir.Constant(I8P, None))
        self.job_n = glob("job_n", I64, i64(0))
        self.busy = glob("busy", I64, i64(0))
        self.started = glob("started", I64, i64(0))
        self.threads = ir.GlobalVariable(m, I64, THREADS_SYMBOL)  # external: THREADS, bound by ensure_runtime
        self.c = {}
        for name, ret, args in (
            ("pthread_mutex_init", I32, [I8P, I8P]),
            ("pthread_cond_init", I32, [I8P, I8P]),
            ("pthread_mutex_lock", I32, [I8P]),
            ("pthread_mutex_unlock", I32, [I8P]),
            ("pthread_cond_wait", I32, [I8P, I8P]),
            ("pthread_cond_broadcast", I32, [I8P]),
            ("pthread_create", I32, [I64.as_pointer(), I8P, I8P, I8P]),
            ("pthread_detach", I32, [I64]),
        ):
            self.c[name] = ir.Function(m, ir.FunctionType(ret, args), name)

    def ptr(self, b, g):
        return b.bitcast(g, I8P)

    def call(self, b, name, *args):
        return b.call(self.c[name], list(args))

    def lock(self, b):
        self.call(b, "pthread_mutex_lock", self.ptr(b, self.mutex))

    def unlock(self, b):
        self.call(b, "pthread_mutex_unlock", self.ptr(b, self.mutex))

    def load(self, b, g, order="acquire"):
        return b.load_atomic(g, order, 8)

    def store(self, b, v, g, order="release"):
        b.store_atomic(v, g, order, 8)

    # -- running chunks ------------------------------------------------------------------------------------
    def claim_loop(self, fn, b, gen, job_fn, ctx, n, signal: bool):
        """Claim and run chunks of generation ``gen`` until none is left; a worker (``signal``) that finishes
        the region's last chunk wakes the caller."""
        head, try_bb, run_bb, out = (fn.append_basic_block(x) for x in ("claim", "try", "run", "claimed.out"))
        b.branch(head)
        b.position_at_end(head)
        cur = self.load(b, self.claim)
        same = b.icmp_unsigned("==", b.lshr(cur, i64(32)), gen)
        c = b.and_(cur, i64(0xFFFFFFFF))
        b.cbranch(b.and_(same, b.icmp_signed("<", c, n)), try_bb, out)
        b.position_at_end(try_bb)
        pair = b.cmpxchg(self.claim, cur, b.add(cur, i64(1)), "acq_rel", "acquire")
        b.cbranch(b.extract_value(pair, 1), run_bb, head)
        b.position_at_end(run_bb)
        b.call(b.bitcast(job_fn, CHUNK_FN.as_pointer()), [ctx, c])
        left = b.atomic_rmw("sub", self.remaining, i64(1), "acq_rel")
        if signal:
            with b.if_then(b.icmp_signed("==", left, i64(1))):
                self.lock(b)
                self.call(b, "pthread_cond_broadcast", self.ptr(b, self.done))
                self.unlock(b)
        b.branch(head)
        b.position_at_end(out)

    def spin_until(self, fn, b, cond_of_load, name):
        """Spin up to SPIN loads while ``cond_of_load`` is false."""
        head, step, out = (fn.append_basic_block(f"{name}.{x}") for x in ("spin", "step", "out"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64)
        k.add_incoming(i64(0), entry)
        b.cbranch(b.or_(cond_of_load(b), b.icmp_signed(">=", k, i64(SPIN))), out, step)
        b.position_at_end(step)
        k.add_incoming(b.add(k, i64(1)), step)
        b.branch(head)
        b.position_at_end(out)

    def build_worker(self):
        fn = ir.Function(self.m, ir.FunctionType(I8P, [I8P]), "scriptc.pool.worker")
        fn.linkage = "internal"
        b = TextBuilder(fn.append_basic_block("entry"))
        seen_slot = b.alloca(I64)
        b.store(i64(0), seen_slot)
        loop = fn.append_basic_block("wait")
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.load(seen_slot)
        self.spin_until(fn, b, lambda b: b.icmp_unsigned("!=", self.load(b, self.generation), seen), "w")
        self.lock(b)
        sleep, awake = fn.append_basic_block("sleep"), fn.append_basic_block("awake")
        check = fn.append_basic_block("check")
        b.branch(check)
        b.position_at_end(check)
        b.cbranch(b.icmp_unsigned("==", b.load(self.generation), seen), sleep, awake)
        b.position_at_end(sleep)
        self.call(b, "pthread_cond_wait", self.ptr(b, self.work), self.ptr(b, self.mutex))
        b.branch(check)
        b.position_at_end(awake)
        gen = b.load(self.generation)
        job_fn, ctx, n = b.load(self.job_fn), b.load(self.job_ctx), b.load(self.job_n)
        b.store(gen, seen_slot)
        self.unlock(b)
        self.claim_loop(fn, b, gen, job_fn, ctx, n, signal=True)
        b.branch(loop)
        return fn

    def build_run(self, worker, name: str = "scriptc.pool.run.impl"):
        fn = ir.Function(self.m, ir.FunctionType(VOID, [I8P, I8P, I64]), name)
        job_fn, ctx, n = fn.args
        b = TextBuilder(fn.append_basic_block("entry"))
        serial, parallel = fn.append_basic_block("serial"), fn.append_basic_block("parallel")
        few = b.icmp_signed("<=", n, i64(1))
        with b.if_else(few) as (then, otherwise):
            with then:
                b.branch(serial)
            with otherwise:
                pair = b.cmpxchg(self.busy, i64(0), i64(1), "acquire", "monotonic")
                b.cbranch(b.extract_value(pair, 1), parallel, serial)
        b.unreachable()
        # serial: every chunk here, in order (one chunk, or the pool is in use)
        b.position_at_end(serial)
        head, body, done = (fn.append_basic_block(x) for x in ("serial.head", "serial.body", "serial.done"))
        b.branch(head)
        b.position_at_end(head)
        c = b.phi(I64)
        c.add_incoming(i64(0), serial)
        b.cbranch(b.icmp_signed("<", c, n), body, done)
        b.position_at_end(body)
        b.call(b.bitcast(job_fn, CHUNK_FN.as_pointer()), [ctx, c])
        c.add_incoming(b.add(c, i64(1)), body)
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()
        # parallel: start missing workers, publish the job, work, wait for the last chunk
        b.position_at_end(parallel)
        want = b.sub(b.load(self.threads), i64(1))
        want = b.select(b.icmp_signed(">", want, i64(MAX_THREADS - 1)), i64(MAX_THREADS - 1), want)
        create_head, create, created = (fn.append_basic_block(x) for x in ("create.head", "create", "created"))
        tid = b.alloca(I64)
        b.branch(create_head)
        b.position_at_end(create_head)
        have = b.load(self.started)
        b.cbranch(b.icmp_signed("<", have, want), create, created)
        b.position_at_end(create)
        status = self.call(
            b, "pthread_create", tid, ir.Constant(I8P, None), b.bitcast(worker, I8P), ir.Constant(I8P, None)
        )
        ok = b.icmp_signed("==", status, i32(0))
        with b.if_then(ok):
            self.call(b, "pthread_detach", b.load(tid))
            b.store(b.add(have, i64(1)), self.started)
        b.cbranch(ok, create_head, created)  # no more threads: go on with those there are
        b.position_at_end(created)
        self.lock(b)
        gen = b.add(b.load(self.generation), i64(1))
        b.store(job_fn, self.job_fn)
        b.store(ctx, self.job_ctx)
        b.store(n, self.job_n)
        self.store(b, n, self.remaining)
        self.store(b, b.shl(gen, i64(32)), self.claim)
        self.store(b, gen, self.generation)
        self.call(b, "pthread_cond_broadcast", self.ptr(b, self.work))
        self.unlock(b)
        self.claim_loop(fn, b, gen, job_fn, ctx, n, signal=False)
        self.spin_until(fn, b, lambda b: b.icmp_signed("==", self.load(b, self.remaining), i64(0)), "r")
        check, sleep, finished = (fn.append_basic_block(x) for x in ("wait.check", "wait.sleep", "finished"))
        self.lock(b)
        b.branch(check)
        b.position_at_end(check)
        b.cbranch(b.icmp_signed("==", self.load(b, self.remaining), i64(0)), finished, sleep)
        b.position_at_end(sleep)
        self.call(b, "pthread_cond_wait", self.ptr(b, self.done), self.ptr(b, self.mutex))
        b.branch(check)
        b.position_at_end(finished)
        self.unlock(b)
        self.store(b, i64(0), self.busy)
        b.ret_void()

    def build_reset(self):
        fn = ir.Function(self.m, ir.FunctionType(VOID, []), "scriptc.pool.reset")
        b = TextBuilder(fn.append_basic_block("entry"))
        null = ir.Constant(I8P, None)
        self.call(b, "pthread_mutex_init", self.ptr(b, self.mutex), null)
        self.call(b, "pthread_cond_init", self.ptr(b, self.work), null)
        self.call(b, "pthread_cond_init", self.ptr(b, self.done), null)
        for g in (self.started, self.busy, self.remaining):
            b.store(i64(0), g)
        b.ret_void()


def build_module(run_name: str = "scriptc.pool.run.impl") -> ir.Module:
    """The pool's module: ``run_name`` (``scriptc.pool.run.impl``, bound to ``scriptc.pool.run`` in the JIT; an
    exported library defines ``scriptc.pool.run`` itself), ``scriptc.pool.reset``, and an external
    ``scriptc.pool.threads``."""
    builder = _Builder()
    builder.build_run(builder.build_worker(), run_name)
    builder.build_reset()
    return builder.m


if sys.platform == "win32":  # pragma: no cover - scriptc targets POSIX systems (pthreads)
    raise ImportError("scriptc's thread pool needs POSIX threads")
