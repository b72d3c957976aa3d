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

import ctypes
import os
import queue
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

        threads = [threading.Thread(target=run, name="scriptc-codegen", daemon=True)
                   for _ in range(min(THREADS, len(modules)) - 1)]
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
        from llvmlite import binding as llvm    # (imported by the engine by now: importing scriptc does not)
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
            module_passes, function_passes, builder = self._quick_passes(worker.machines[False], unoptimized)
            _raw("LLVMPY_RunNewModulePassManager")(module_passes, mod, builder)
            for fn in mod.functions:
                if not fn.is_declaration:
                    _raw("LLVMPY_RunNewFunctionPassManager")(function_passes, fn, builder)
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
