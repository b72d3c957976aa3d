"""Tiered compilation: the first call of a signature runs code made with a short pipeline; O3 follows in another
process and replaces it when linked.

Why: O3 and its code generation are most of a first call (68 of ~170 ms for the seed loop, 2.8 of 3.3 s for the
MLP training step), while the short pipeline (``engine.QUICK_*_PASSES``: inlining, SROA, instcombine,
simplifycfg, then the same code generator) takes a third to a fifth of that and its code runs within 2x of
O3's (the same IR: results are identical, as no instruction carries fast-math flags). ``submit`` queues a
module's text; one thread sends it to the optimizing process (``optimizer_worker.py``), links the object file
that comes back and passes it to the job's ``done``, which installs it (``function.py``).

Why a process, not a thread: llvmlite serializes every LLVM call on one lock, so an O3 compile of seconds on a
thread would stall the next first-tier compile; the process runs on another core, and LLVM failing there
cannot end the user's process. When the process cannot start or dies, that module is optimized here instead and
the next one starts a new process; after ``MAX_PROCESS_FAILURES`` failed processes, every module is optimized
here (``process_error()`` says why).

``SCRIPTC_TIERS=0`` turns tiers off (every signature compiles at O3 before its first call). A child made by
``fork`` sends what was queued to its own process; at exit, jobs whose code goes to the on-disk cache finish,
the others are dropped.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import sys
import threading

from . import optimizer_worker as protocol
from .engine import PIPELINE, engine


IDLE_SECONDS = 10.0  # the optimizer process ends after this long without work
MAX_PROCESS_FAILURES = 3


def enabled() -> bool:
    return os.environ.get("SCRIPTC_TIERS", "1") != "0"


def applies(fn) -> bool:
    """Whether a scripted (or transformed) function's first calls run first-tier code: tiers are on, and the
    function is not ``tiered=False`` nor ``fastmath`` (whose two tiers could reassociate differently)."""
    return enabled() and fn.tiered and not fn.fastmath


class Job:
    """One module to optimize. ``done(obj, error)`` runs on the optimizer's thread: ``obj`` the optimized object
    file, or None and ``error`` saying why there is none."""

    __slots__ = ("text", "done", "persistent", "finished")

    def __init__(self, text: str, done, persistent: bool):
        self.text, self.done, self.persistent = text, done, persistent
        self.finished = threading.Event()


class _State:
    def __init__(self, queued=()):
        self.cond = threading.Condition()
        self.queue: collections.deque[Job] = collections.deque(queued)
        self.running: Job | None = None
        self.held = 0
        self.thread: threading.Thread | None = None
        self.process: _Process | None = None
        self.process_error: str | None = None  # why modules are optimized in this process (None: they are not)
        self.process_failures = 0
        self.closing = False  # the interpreter exits: what is left is dropped


_STATE = _State()


def submit(text: str, done, persistent: bool = False) -> Job:
    """Queue a module for O3; ``persistent``: its code goes to the on-disk cache (exit waits for it)."""
    job = Job(text, done, persistent)
    state = _STATE
    with state.cond:
        state.queue.append(job)
        if state.thread is None:
            _start_thread(state)
        state.cond.notify_all()
    return job


def _start_thread(state: _State) -> None:
    state.thread = threading.Thread(target=_serve, args=(state,), name="scriptc-optimizer", daemon=True)
    state.thread.start()


def wait_all(timeout: float | None = None) -> bool:
    """Wait until every queued module is optimized and installed; False if ``timeout`` passed first."""
    state = _STATE
    with state.cond:
        return state.cond.wait_for(lambda: not state.queue and state.running is None, timeout)


@contextlib.contextmanager
def held():
    """Queue but do not optimize within the block (tests: to call the first tier's code for certain)."""
    state = _STATE
    with state.cond:
        state.held += 1
    try:
        yield
    finally:
        with state.cond:
            state.held -= 1
            state.cond.notify_all()


def process_error() -> str | None:
    """Why modules are optimized in this process rather than the optimizer's (None while they are not)."""
    return _STATE.process_error


# Held by the optimizer's thread except while it waits on its process, and taken by fork(): a child never
# inherits a lock (the entry points', a job's events, LLVM's) held by a thread it does not have.
_FORK_LOCK = threading.Lock()


def _serve(state: _State) -> None:
    while True:
        with state.cond:
            if not state.cond.wait_for(lambda: state.queue and not state.held, IDLE_SECONDS):
                job = None
            else:
                job = state.running = state.queue.popleft()
        if job is None:  # idle: the process's memory (100-300 MB) goes back, and this thread ends (a process
            with _FORK_LOCK:  # with threads is one Python 3.12+ warns about at fork); both start again on demand
                _stop(state, reap=True)
            with state.cond:
                if not state.queue:
                    state.thread = None
                    return
            continue
        _run(state, job)
        job = None  # (a waiting thread's locals are no garbage: the job's done() refers to its function)


def _run(state: _State, job: Job) -> None:
    with _FORK_LOCK:
        try:
            try:
                obj, error = _optimize(state, job.text)
            except Exception as e:  # noqa: BLE001 - LLVM's error here: done() reports it
                obj, error = None, f"{type(e).__name__}: {e}"
            job.done(obj, error)
        except BaseException:  # noqa: BLE001 - done() raised (its warning made an error?): say so, go on
            import traceback

            traceback.print_exc()
        finally:
            job.finished.set()
            with state.cond:
                state.running = None
                state.cond.notify_all()


def _optimize(state: _State, text: str) -> tuple[bytes | None, str | None]:
    if state.closing:
        return None, None
    if state.process_error is None:
        try:
            obj = _from_process(state, text)
        except (OSError, ValueError, EOFError) as e:
            if state.closing:
                return None, None
            _stop(state, kill=True)
            state.process_failures += 1
            if state.process_failures >= MAX_PROCESS_FAILURES:
                state.process_error = f"the optimizer process failed ({type(e).__name__}: {e})"
        else:
            if obj is not None:
                return obj, None
    eng = engine()  # here, LLVM raises its error for the job's done() to report
    return eng.emit_object(eng.optimize(text)), None


def _from_process(state: _State, text: str) -> bytes | None:
    """The optimized object file; None when LLVM refused the module there."""
    if state.process is None:
        state.process = _Process()
    proc = state.process
    if not proc.header_sent:
        _send_header(proc)
    _FORK_LOCK.release()
    try:
        protocol.write_frame(proc.stdin, text.encode())
        reply = protocol.read_frame(proc.stdout)
    finally:
        _FORK_LOCK.acquire()
    if reply is None or reply[:1] not in (b"o", b"e"):
        raise EOFError(f"it exited with status {proc.poll()}")
    return reply[1:] if reply[:1] == b"o" else None


def _send_header(proc: _Process) -> None:
    import json

    eng = engine()
    header = {"triple": eng.triple, "cpu": eng.cpu, "features": eng.features, "pipeline": PIPELINE}
    protocol.write_frame(proc.stdin, json.dumps(header).encode())
    proc.header_sent = True


class _Process:
    """The optimizer process (``optimizer_worker.py``), started with ``posix_spawn`` by the optimizer's thread when
    the first module is queued: ``subprocess``'s import alone (12 ms, holding the GIL) would slow the end of that
    first call. (Started earlier, at the first tier's compile, it made O3's code arrive 30-60 ms sooner but first
    calls 5-25 ms slower on 2 cores.) Its pipes are unbuffered: a buffered file's lock, held by the optimizer's
    thread in a read when another thread forks, would stay held in the child."""

    def __init__(self):
        import llvmlite

        if not sys.executable or not hasattr(os, "posix_spawn"):
            raise OSError("no Python executable to run it" if hasattr(os, "posix_spawn") else "no posix_spawn here")
        llvmlite_dir = os.path.dirname(os.path.dirname(os.path.abspath(llvmlite.__file__)))
        to_child, to_parent = os.pipe(), os.pipe()
        try:
            self.pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", protocol.__file__, llvmlite_dir],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, to_child[0], 0),
                    (os.POSIX_SPAWN_DUP2, to_parent[1], 1),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
            )
        except BaseException:
            for fd in (*to_child, *to_parent):
                os.close(fd)
            raise
        os.close(to_child[0])
        os.close(to_parent[1])
        self.stdin = open(to_child[1], "wb", buffering=0)
        self.stdout = open(to_parent[0], "rb", buffering=0)
        self.header_sent = False
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status; None if ``timeout`` seconds passed first."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)


def _stop(state: _State, reap: bool = False, kill: bool = False) -> None:
    """Close the pipes to the optimizer process (it exits once its job is done); ``reap``: wait for it to exit;
    ``kill``: end it now. (A forked child only closes its copies: the process is its parent's.)"""
    proc, state.process = state.process, None
    if proc is None:
        return
    if kill:
        proc.kill()
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError, ValueError):
            pipe.close()
    if reap or kill:
        proc.wait(timeout=5)


def _after_fork_in_child() -> None:
    """The child has none of the parent's threads: its queue (and the job the parent was running) go to an
    optimizer process of its own."""
    global _STATE
    _FORK_LOCK.release()
    old = _STATE
    pending = ([old.running] if old.running is not None else []) + list(old.queue)
    _stop(old)  # the child's copies of the parent's pipes; the parent's optimizer stays the parent's
    _STATE = _State(pending)
    if pending:
        _start_thread(_STATE)


def _at_exit() -> None:
    """Finish the jobs whose code goes to the on-disk cache; drop the others."""
    state = _STATE
    with state.cond:  # up to the last job whose code goes to the cache: those before may be what it calls
        last = max((k for k, job in enumerate(state.queue) if job.persistent), default=-1)
        state.queue = collections.deque(list(state.queue)[: last + 1])
        waiting = [j for j in (state.running, *state.queue) if j is not None and j.persistent]
        state.held = 0
        state.cond.notify_all()
    for job in waiting:
        job.finished.wait()
    with state.cond:
        state.closing = True
        state.queue.clear()
    _stop(state, kill=True)  # O3 of a job nobody will run is not worth finishing


def _before_fork() -> None:
    _FORK_LOCK.acquire()


def _after_fork_in_parent() -> None:
    _FORK_LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
