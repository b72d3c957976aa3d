"""The first tier's modules generated at once, one per thread (``Engine.quick_objects``).

Why it is safe: LLVM compiles modules of distinct contexts concurrently (ORC's and ThinLTO's thread pools do),
as long as each thread has its own context and target machine (a target machine caches subtargets as it goes).
Each worker here owns both, and the calls that do the work (parsing, the first tier's passes, code generation)
touch nothing else. llvmlite serializes every call on one process-wide lock; these calls go to the same C
functions without it (``_raw``), so that they run in parallel and release the GIL as any ctypes call does. What
touches shared state (the JIT, linking, symbols) stays on the caller's thread, under the lock.

Why: in a large program's first tier most of the time is code generation of its kernels (the MLP training
step: 48 functions, 825 of its 1,300 ms), which ``first_tier.first_tier_modules`` splits into independent
modules.
"""

from __future__ import annotations

import collections
import ctypes
import os
import queue
import sys
import threading

# at most this many modules are generated at once (SCRIPTC_CODEGEN_THREADS=1: one after the other): the cores
# this process may run on
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
THREADS = max(1, int(os.environ.get("SCRIPTC_CODEGEN_THREADS", "0")) or min(_CORES, 8))


def _raw(name: str):
    """llvmlite's ctypes function ``name`` without its process-wide lock."""
    from llvmlite.binding import ffi

    return getattr(ffi.lib, name)._cfn


class Worker:
    """A thread's own LLVM context and target machines (optimizing and not)."""

    def __init__(self, machine):
        from llvmlite.binding import create_context

        self.context = create_context()
        self.machines = {False: machine(3), True: machine(0)}


class Pool:
    """Threads generating first-tier object files, each with a ``Worker`` of its own."""

    def __init__(self, machine, quick_passes):
        self._machine, self._quick_passes = machine, quick_passes
        self._idle: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._made = 0

    def objects(self, modules: list[tuple[str, bool]], triple: str, data_layout: str) -> list[bytes]:
        """The object file of each ``(text, unoptimized)``, generated on up to ``THREADS`` threads (this one
        included); an error in any is raised here."""
        results: list = [None] * len(modules)
        # the longest first: a program's body after its two halves of kernels made the threads wait on it alone
        pending = sorted(enumerate(modules), key=lambda m: len(m[1][0]))

        def run() -> None:
            worker = self._worker()
            try:
                while True:
                    with self._lock:
                        if not pending:
                            return
                        k, (text, unoptimized) = pending.pop()
                    try:
                        results[k] = self._object(worker, text, unoptimized, triple, data_layout)
                    except BaseException as e:  # noqa: BLE001 - raised on the caller's thread below
                        results[k] = e
            finally:
                self._idle.put(worker)

        threads = [
            threading.Thread(target=run, name="scriptc-codegen", daemon=True)
            for _ in range(min(THREADS, len(modules)) - 1)
        ]
        for t in threads:
            t.start()
        run()
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results

    def _worker(self) -> Worker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return Worker(self._machine)

    def _object(self, worker: Worker, text: str, unoptimized: bool, triple: str, data_layout: str) -> bytes:
        from llvmlite import binding as llvm  # (imported by the engine by now: importing scriptc does not)

        with llvm.ffi.OutputString() as error:
            ptr = _raw("LLVMPY_ParseAssembly")(worker.context, ctypes.c_char_p(text.encode()), error)
            if error:
                raise RuntimeError(f"LLVM IR parsing error\n{error}")
        mod = llvm.ModuleRef(ptr, worker.context)
        try:
            mod.triple, mod.data_layout = triple, data_layout
            with llvm.ffi.OutputString() as error:
                if _raw("LLVMPY_VerifyModule")(mod, error):
                    raise RuntimeError(str(error))
            passes, builder = self._quick_passes(worker.machines[False], unoptimized)
            _raw("LLVMPY_RunNewModulePassManager")(passes, mod, builder)
            with llvm.ffi.OutputString() as error:
                buffer = _raw("LLVMPY_TargetMachineEmitToMemory")(worker.machines[unoptimized], mod, 1, error)
                if not buffer:
                    raise RuntimeError(str(error))
            try:
                return ctypes.string_at(_raw("LLVMPY_GetBufferStart")(buffer), _raw("LLVMPY_GetBufferSize")(buffer))
            finally:
                _raw("LLVMPY_DisposeMemoryBuffer")(buffer)
        finally:
            mod.close()


# While a stream's thread works next to the lowering (Python, holding the GIL), each of its LLVM calls waits for
# the GIL when it returns, up to the switch interval (5 ms by default): the MLP training step's first batch of
# kernels took 88 ms for 5 ms of LLVM work. Shorter while a stream runs.
STREAM_SWITCH_INTERVAL = 0.0002
_SWITCHING_LOCK = threading.Lock()
_SWITCHING = [0, 0.0]  # streams running, the switch interval before the first


def _quick_switching(start: bool) -> None:
    with _SWITCHING_LOCK:
        if start:
            if _SWITCHING[0] == 0:
                _SWITCHING[1] = sys.getswitchinterval()
                sys.setswitchinterval(min(_SWITCHING[1], STREAM_SWITCH_INTERVAL))
            _SWITCHING[0] += 1
        else:
            _SWITCHING[0] -= 1
            if _SWITCHING[0] == 0:
                sys.setswitchinterval(_SWITCHING[1])


class Stream:
    """Modules generated on a thread of their own as they are submitted (``streaming.py``: a program's kernels
    while the rest of it is lowered); after ``finish`` the caller's thread helps, then ``results`` returns every
    object file in the order submitted."""

    def __init__(self, pool: Pool, triple: str, data_layout: str):
        self._pool, self._target = pool, (triple, data_layout)
        self._pending: collections.deque = collections.deque()
        self._results: list = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, text: str, unoptimized: bool) -> None:
        with self._cond:
            self._pending.append((len(self._results), text, unoptimized))
            self._results.append(None)
            self._cond.notify()
        if self._thread is None:
            _quick_switching(True)
            self._thread = threading.Thread(target=self._run, args=(False,), name="scriptc-codegen", daemon=True)
            self._thread.start()

    def finish(self) -> None:
        """Nothing more comes: generate what is pending on this thread too, the last submitted (the entry points,
        then the program's body) first."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._run(True)

    def results(self) -> list[bytes]:
        """Every module's object file once all are generated (after ``finish``), in the order submitted."""
        self._stop_thread()
        for r in self._results:
            if isinstance(r, BaseException):
                raise r
        return self._results

    def cancel(self) -> None:
        """Nothing more will be submitted nor finished (the lowering failed): the thread ends."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
        self._stop_thread()

    def _stop_thread(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            _quick_switching(False)

    def _run(self, newest_first: bool) -> None:
        worker = self._pool._worker()
        try:
            while True:
                with self._cond:
                    while not self._pending and not self._closed:
                        self._cond.wait()
                    if not self._pending:
                        return
                    k, text, unoptimized = self._pending.pop() if newest_first else self._pending.popleft()
                try:
                    self._results[k] = self._pool._object(worker, text, unoptimized, *self._target)
                except BaseException as e:  # noqa: BLE001 - raised on the caller's thread by finish
                    self._results[k] = e
        finally:
            self._pool._idle.put(worker)
