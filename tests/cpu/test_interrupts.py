"""Ctrl-C while native code runs (interrupts.py): a SIGINT one second into a loop that would run for minutes
raises KeyboardInterrupt within a fraction of a second, for scalar loops, loops without the GIL, while loops,
prange loops, time loops over arrays and nests of short loops; the memory the call holds is freed; a handler
that returns lets the loop finish with the right result. Each case runs in a child process that is sent the
signal (a SIGINT to this process could end the test run)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = textwrap.dedent("""
    import sys, time, signal
    import numpy as np
    import scriptc
    from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count

    @scriptc.script
    def scalar(n: int) -> float:
        s = 0.0
        for i in range(n):
            s += (i % 7) * 0.5
        return s

    @scriptc.script(nogil=True)
    def without_gil(n: int) -> float:
        s = 0.0
        for i in range(n):
            s += (i % 7) * 0.5
        return s

    @scriptc.script
    def while_loop(n: int) -> float:
        s = 0.0
        i = 0
        while i < n:
            s += (i % 7) * 0.5
            i += 1
        return s

    @scriptc.script
    def parallel(n: int) -> float:
        s = 0.0
        for i in scriptc.prange(n):
            s += (i % 7) * 0.5
        return s

    @scriptc.script
    def time_loop(x: np.ndarray, n: int) -> np.ndarray:
        for i in range(n):
            x = np.sin(x) + 0.1
        return x

    @scriptc.script
    def short_loops(n: int) -> float:
        s = 0.0
        for i in range(n):
            for j in range(100):
                for k in range(100):
                    s += (i + j + k) % 3
        return s

    @scriptc.script
    def holding_arrays(n: int) -> float:
        a = np.ones(1000)
        b = a * 2.0
        s = 0.0
        for i in range(n):
            s += b[i % 1000]
        return s + a[0]

    CALLS = {"scalar": (scalar, 10 ** 12), "without_gil": (without_gil, 10 ** 12), "while": (while_loop, 10 ** 12),
             "parallel": (parallel, 10 ** 13), "time_loop": (time_loop, np.ones(100), 10 ** 11),
             "short_loops": (short_loops, 10 ** 9), "holding_arrays": (holding_arrays, 10 ** 12)}
    fn, *args = CALLS[sys.argv[1]]
    small = [a if not isinstance(a, int) else 3 for a in args]
    fn(*small)                                  # compiled before the clock starts
    if sys.argv[2] == "returning":              # a handler that returns: the loop goes on
        seen = []
        signal.signal(signal.SIGINT, lambda *a: seen.append(1))
        scriptc.watch_interrupts()
    before = allocation_count() - free_count()
    print("ready", flush=True)
    start = time.perf_counter()
    try:
        result = fn(*[a if not isinstance(a, int) else int(sys.argv[3]) for a in args])
        print("finished", time.perf_counter() - start, repr(result), seen if sys.argv[2] == "returning" else "")
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - start, allocation_count() - free_count() - before)
""")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupts") / "long_loops.py"
    path.write_text(PROGRAM)
    return str(path)


def run(program: str, case: str, mode: str = "default", n: int = 0, delay: float = 1.0) -> list[str]:
    env = dict(os.environ, PYTHONPATH=ROOT, SCRIPTC_TIERS="0")
    child = subprocess.Popen(
        [sys.executable, program, case, mode, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    return out.split()


@pytest.mark.parametrize(
    "case", ["scalar", "without_gil", "while", "parallel", "time_loop", "short_loops", "holding_arrays"]
)
def test_ctrl_c_stops_a_long_loop(program, case):
    words = run(program, case, n=10**12 if case not in ("short_loops", "time_loop") else 10**9)
    assert words[0] == "interrupted", words
    assert float(words[1]) < 1.0 + 0.9, f"{case} stopped {words[1]} s after it started (SIGINT at 1 s)"
    assert int(words[2]) == 0, f"{case} leaked {words[2]} arrays"


def test_a_handler_that_returns_lets_the_loop_finish(program):
    words = run(program, "scalar", "returning", n=6 * 10**8, delay=0.3)
    assert words[0] == "finished", words
    expected = sum((i % 7) * 0.5 for i in range(7)) * (6 * 10**8 // 7) + sum(
        (i % 7) * 0.5 for i in range(6 * 10**8 % 7)
    )
    assert float(words[2]) == expected and words[3] == "[1]", words
