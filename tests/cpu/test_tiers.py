"""Tiered compilation (backend/llvm/runtime/optimizer.py): a signature's first call runs code of the short pipeline, O3
compiled in another process replaces it. Both tiers must give CPython's results; the swap keeps every
signature's dispatch; a dead optimizer process, a failed optimization, fork and the on-disk cache are handled.
The rest of the suite runs with tiers off (conftest.py), so that each test runs one known tier."""

import os
import re
import subprocess
import sys
from pathlib import Path
import textwrap
import warnings

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime import codegen_threads, optimizer
from tests.e2e.test_corpus import check, check_raises, corpus


@pytest.fixture(autouse=True)
def tiers_on(monkeypatch):
    monkeypatch.setenv("SCRIPTC_TIERS", "1")


def tiers_of(f) -> set:
    return {native.tier for native in f._native.values()}


def fresh(fn):
    """A new ScriptFunction of a corpus function's Python function (nothing compiled yet)."""
    return scriptc.script(fn.py_func, fastmath=fn.fastmath, nogil=fn.nogil)


@pytest.mark.parametrize("c", corpus.CASES, ids=lambda c: c.id)
def test_both_tiers_match_cpython(c, capfd):
    f = fresh(c.fn)
    with optimizer.held():
        check(c, lambda _: f, capfd)
        assert tiers_of(f) == ({"optimized"} if f.fastmath else {"first"})
    assert f.wait_optimized(timeout=120)
    assert tiers_of(f) == {"optimized"}
    check(c, lambda _: f, capfd)


@pytest.mark.parametrize("c", corpus.ERROR_CASES, ids=lambda c: c.id)
def test_both_tiers_raise_like_cpython(c, capfd):
    f = fresh(c.fn)
    with optimizer.held():
        check_raises(c, f, capfd)
    assert f.wait_optimized(timeout=120)
    check_raises(c, f, capfd)


@scriptc.script
def scale(x, k):
    return x * k


def test_swap_keeps_every_signature():
    """Each signature's entry point falls back to the previous one: replacing one rebuilds the chain."""
    a = np.arange(5.0)
    with optimizer.held():
        assert scale(a, 2.0).tolist() == (a * 2.0).tolist()
        assert scale(3, 4) == 12
        assert scale(a.astype(np.int32), 3).dtype == np.int32
        assert tiers_of(scale) == {"first"}
    assert scriptc.wait_optimized(timeout=120)
    assert tiers_of(scale) == {"optimized"}
    entry = type(scale).__call__
    assert entry.__self__.native.tier == "optimized"  # the chain's head is optimized code
    assert scale(a, 2.0).tolist() == (a * 2.0).tolist()
    assert scale(3, 4) == 12 and type(scale(3, 4)) is int
    assert scale(a.astype(np.int32), 3).tolist() == (a.astype(np.int32) * 3).tolist()
    assert scale(2.5, 2.0) == 5.0  # a new signature after the swap


def test_tiers_off_compiles_o3_first(monkeypatch):
    monkeypatch.setenv("SCRIPTC_TIERS", "0")
    f = scriptc.script(scale.py_func)
    with optimizer.held():
        assert f(2.0, 3.0) == 6.0
        assert tiers_of(f) == {"optimized"}


def test_fastmath_is_not_tiered():
    f = scriptc.script(scale.py_func, fastmath=True)
    with optimizer.held():
        assert f(2.0, 3.0) == 6.0
        assert tiers_of(f) == {"optimized"}


def test_optimizes_in_another_process():
    f = scriptc.script(scale.py_func)
    f(1.0, 2.0)
    assert f.wait_optimized(timeout=120) and tiers_of(f) == {"optimized"}
    assert optimizer.process_error() is None
    assert optimizer._STATE.process is not None and optimizer._STATE.process.poll() is None


def test_a_dead_optimizer_process_is_replaced(monkeypatch):
    """The module it was to optimize is optimized here; the next starts a new process; after
    MAX_PROCESS_FAILURES dead processes, everything is optimized here."""
    monkeypatch.setattr(optimizer, "_STATE", optimizer._State())
    for failures in range(1, optimizer.MAX_PROCESS_FAILURES + 1):
        f = scriptc.script(scale.py_func)
        f(1.0, 2.0)
        assert f.wait_optimized(timeout=120)
        optimizer._STATE.process.kill()
        optimizer._STATE.process.wait()
        g = scriptc.script(scale.py_func)
        assert g(3.0, 2.0) == 6.0
        assert g.wait_optimized(timeout=120) and tiers_of(g) == {"optimized"} and g(3.0, 2.0) == 6.0
        assert optimizer._STATE.process_failures == failures
        if failures < optimizer.MAX_PROCESS_FAILURES:
            assert optimizer.process_error() is None
    assert "optimizer process failed" in optimizer.process_error()
    h = scriptc.script(scale.py_func)
    assert h(1.0, 5.0) == 5.0 and h.wait_optimized(timeout=120) and tiers_of(h) == {"optimized"}
    assert optimizer._STATE.process is None


def test_failed_optimization_warns_and_keeps_first_tier(monkeypatch):
    def failing(state, text):
        raise RuntimeError("LLVM said no")

    monkeypatch.setattr(optimizer, "_optimize", failing)
    f = scriptc.script(scale.py_func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert f(2.0, 4.0) == 8.0
        assert f.wait_optimized(timeout=120)
    assert any("optimizing scale failed" in str(w.message) and "LLVM said no" in str(w.message) for w in caught)
    assert tiers_of(f) == {"first"} and f(2.0, 4.0) == 8.0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_optimizes_what_was_pending():
    f = scriptc.script(scale.py_func)
    with optimizer.held():
        f(1.0, 2.0)
        pid = os.fork()
        if pid == 0:  # the child: the parent's held() is not its own
            ok = f.wait_optimized(timeout=120) and tiers_of(f) == {"optimized"} and f(2.0, 3.0) == 6.0
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert f.wait_optimized(timeout=120) and tiers_of(f) == {"optimized"}


def test_cached_code_is_the_optimized_tier(tmp_path):
    """A process exits before O3 is done: exit waits for the jobs that fill the cache; the next process loads
    the optimized code without compiling."""
    (tmp_path / "kern.py").write_text(
        textwrap.dedent("""
        import numpy as np, scriptc
        @scriptc.script(cache=True)
        def norm2(x):
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i] * x[i]
            return s
    """)
    )
    run = textwrap.dedent("""
        import sys, numpy as np
        sys.path.insert(0, sys.argv[1])
        from kern import norm2
        from scriptc.backend.llvm.runtime import codegen_threads, optimizer
        with optimizer.held():      # O3 starts at exit, which waits for it: the cache is filled
            print(norm2(np.arange(4.0)), {n.tier for n in norm2._native.values()})
    """)
    env = dict(os.environ, SCRIPTC_TIERS="1", SCRIPTC_CACHE_DIR=str(tmp_path / "cache"))
    outputs = [
        subprocess.run(
            [sys.executable, "-c", run, str(tmp_path)], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert outputs[0] == ["14.0", "{'first'}"]
    assert outputs[1] == ["14.0", "{'optimized'}"]  # a miss would run first-tier code: loaded from the cache
    assert list((tmp_path / "cache").rglob("*.scm")), "no source-key manifest was written"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_pool_while_optimizing(method):
    """A pool forked while O3 is pending (its children inherit the queue) or spawned (they compile anew)."""
    import multiprocessing
    from tests.e2e.test_pickle_code import scale as pooled

    x = np.arange(6, dtype=np.int16)
    with optimizer.held():
        pooled(x, 2.0)  # a first-tier signature, its O3 queued when the pool forks
        with multiprocessing.get_context(method).Pool(2) as pool:
            got = pool.starmap(pooled, [(x * k, 2.0) for k in range(4)])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, (x * k) * 2.0 + 1.0)
    assert pooled.wait_optimized(timeout=120)
    np.testing.assert_array_equal(pooled(x, 2.0), x * 2.0 + 1.0)


def test_idle_optimizer_process_ends_and_restarts(monkeypatch):
    import time

    monkeypatch.setattr(optimizer, "IDLE_SECONDS", 0.2)
    monkeypatch.setattr(optimizer, "_STATE", optimizer._State())
    f = scriptc.script(scale.py_func)
    f(1.0, 2.0)
    assert f.wait_optimized(timeout=120)
    proc = optimizer._STATE.process
    assert proc is not None
    deadline = time.monotonic() + 30
    while optimizer._STATE.process is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert optimizer._STATE.process is None and proc.wait(timeout=30) == 0  # it exited, and was reaped
    while optimizer._STATE.thread is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert optimizer._STATE.thread is None  # and the optimizer's thread ended
    g = scriptc.script(scale.py_func)
    assert g(2.0, 2.0) == 4.0 and g.wait_optimized(timeout=120) and tiers_of(g) == {"optimized"}
    assert optimizer.process_error() is None


@scriptc.script
def loss(w, x):
    return float(np.sum((x * w - 1.0) ** 2))


def test_transformed_functions_are_tiered():
    """grad and vmap objects called directly: first tier, then O3, same results (the chain of a grad's entry
    points is rebuilt as a scripted function's)."""
    g = scriptc.grad(loss)
    batched = scriptc.vmap(scale, in_axes=(0, None))
    w, x = 0.5, np.linspace(0.0, 1.0, 7)
    xs = np.arange(12.0).reshape(3, 4)
    expected_grad = float(np.sum(2 * (x * w - 1.0) * x))
    with optimizer.held():
        first = (g(w, x), g(np.full(3, w), x[:3]), batched(xs, 2.0))
        assert tiers_of(g) == {"first"} and tiers_of(batched) == {"first"}
    assert g.wait_optimized(timeout=120) and batched.wait_optimized(timeout=120)
    assert tiers_of(g) == {"optimized"} and tiers_of(batched) == {"optimized"}
    again = (g(w, x), g(np.full(3, w), x[:3]), batched(xs, 2.0))
    assert first[0] == again[0] and abs(first[0] - expected_grad) < 1e-12
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(first[2], again[2])
    np.testing.assert_array_equal(again[2], xs * 2.0)


def test_the_optimizer_process_ignores_ctrl_c(monkeypatch):
    import signal
    import time

    monkeypatch.setattr(optimizer, "_STATE", optimizer._State())
    f = scriptc.script(scale.py_func)
    f(1.0, 2.0)
    assert f.wait_optimized(timeout=120)
    proc = optimizer._STATE.process
    os.kill(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends the whole process group
    time.sleep(0.3)
    assert proc.poll() is None
    g = scriptc.script(scale.py_func)
    assert g(2.0, 3.0) == 6.0 and g.wait_optimized(timeout=120) and tiers_of(g) == {"optimized"}
    assert optimizer._STATE.process is proc and optimizer._STATE.process_failures == 0


def test_tiered_false_compiles_o3_first():
    f = scriptc.script(scale.py_func, tiered=False)
    g = scriptc.grad(scriptc.script(loss.py_func, tiered=False))
    with optimizer.held():
        assert f(2.0, 3.0) == 6.0
        assert g(0.5, np.ones(3)) == float(np.sum(2 * (0.5 - 1.0) * np.ones(3)))
        assert tiers_of(f) == {"optimized"} and tiers_of(g) == {"optimized"}


def test_without_a_process_modules_are_optimized_here(monkeypatch):
    """Where no optimizer process can start (no posix_spawn, no Python executable), O3 runs on the optimizer's
    thread in this process after MAX_PROCESS_FAILURES tries: the swap still happens."""
    monkeypatch.setattr(optimizer, "_STATE", optimizer._State())
    monkeypatch.delattr(os, "posix_spawn")
    for _ in range(optimizer.MAX_PROCESS_FAILURES + 1):
        f = scriptc.script(scale.py_func)
        assert f(2.0, 3.0) == 6.0 and f.wait_optimized(timeout=120) and tiers_of(f) == {"optimized"}
    assert "no posix_spawn here" in optimizer.process_error()


def test_a_failure_warning_made_an_error_does_not_stop_the_optimizer(monkeypatch, capfd):
    def failing(state, text):
        raise RuntimeError("LLVM said no")

    monkeypatch.setattr(optimizer, "_optimize", failing)
    f = scriptc.script(scale.py_func)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(2.0, 4.0) == 8.0
        assert f.wait_optimized(timeout=120)  # set even though the warning raised on the optimizer's thread
    assert optimizer.wait_all(timeout=120)  # (the traceback is printed after that)
    assert "optimizing scale failed" in capfd.readouterr().err
    monkeypatch.undo()
    g = scriptc.script(scale.py_func)
    assert g(1.0, 2.0) == 2.0 and g.wait_optimized(timeout=120) and tiers_of(g) == {"optimized"}


def _function(name: str, blocks: list[tuple[str, str]], attributes: str = "") -> str:
    """LLVM IR text of a function made of (label, terminator) blocks, each padded to 100 lines of arithmetic."""
    body = []
    for label, terminator in blocks:
        body += [f"{label}:"] + [f'  %"{label}.{k}" = add i64 {k}, 1' for k in range(100)] + [f"  {terminator}"]
    return f'define internal void @"{name}"(){attributes}\n{{\n' + "\n".join(body) + "\n}\n"


def test_first_tier_text_marks_long_loop_free_functions_and_calls_refcounts():
    """The first tier's module: long loop-free functions (ordered so that a branch goes back in the text without
    a loop) and the CPython entry point unoptimized; a loop (its back edge forward in the text) is not; reference
    counts, allocations and the entry's array arguments are called, not inlined."""
    from scriptc.backend.llvm.runtime.first_tier import first_tier_text
    from tests.util import filecheck

    refcounts = "".join(
        f'define internal void @"scriptc.rt.{n}"(i8* %".1") alwaysinline\n{{\n.2:\n  ret void\n}}\n'
        for n in ("retain", "release")
    )
    refcounts += (
        'define internal i32 @"scriptc.rt.alloc_array.2.8"(i8** %".1", i64 %".2", i64 %".3", i32 %".4", '
        'i32 %".5", i32 %".6") alwaysinline\n{\n.2:\n  ret i32 0\n}\n'
        'define internal i1 @"scriptc.rt.unbox_array.2.float64.1"(i8* %".1", i64* %".2") alwaysinline\n'
        "{\n.3:\n  ret i1 1\n}\n"
    )
    diamond = _function(
        "m.straight",
        [
            ("entry", 'br i1 1, label %"left", label %"right"'),
            ("join", "ret void"),
            ("right", 'br label %"join"'),
            ("left", 'br label %"join"'),
        ],
    )
    loop = _function(
        "m.loop",
        [
            ("entry", 'br label %"body"'),
            ("latch", 'br i1 1, label %"body", label %"exit"'),
            ("body", 'br label %"latch"'),
            ("exit", "ret void"),
        ],
        " noinline",
    )
    short = 'define internal void @"m.short"()\n{\nentry:\n  ret void\n}\n'
    entry = 'define i8* @"m.pyentry"(i8* %"self")\n{\nentry:\n  ret i8* null\n}\n'
    filecheck(
        first_tier_text(refcounts + diamond + loop + short + entry, "m.pyentry"),
        """
        CHECK: define internal void @"scriptc.rt.retain"(i8* %".1") noinline
        CHECK: define internal void @"scriptc.rt.release"(i8* %".1") noinline
        CHECK: define internal i32 @"scriptc.rt.alloc_array.2.8"({{.*}}) noinline
        CHECK: define internal i1 @"scriptc.rt.unbox_array.2.float64.1"(i8* %".1", i64* %".2") noinline
        CHECK: define internal void @"m.straight"() optnone noinline
        CHECK: define internal void @"m.loop"() noinline{{$}}
        CHECK: define internal void @"m.short"(){{$}}
        CHECK: define i8* @"m.pyentry"(i8* %"self") optnone noinline
        """,
    )


def test_kernels_compiled_once_run_first_tier_code_until_o3s(monkeypatch):
    """A kernel compiled once per process (a sum's pairwise loop) is first-tier code at first, which no cache
    entry records; O3's replaces it for what links after, with the same results."""
    from scriptc.backend.llvm.runtime import runtimes, symbols
    from scriptc.backend.llvm.lowering import summation

    monkeypatch.setattr(summation, "_COMPILED", {})
    for name in [n for n in symbols._BOUND if n.startswith("scriptc.shared.")]:
        monkeypatch.delitem(symbols._BOUND, name)

    def total(x: np.ndarray) -> float:
        return x.sum()

    x = np.random.default_rng(0).random((3, 2, 3, 2, 70))[..., ::2]
    with optimizer.held():
        first = scriptc.script(total)
        assert first(x) == x.sum()
        names = [n for n in symbols._BOUND if n.startswith("scriptc.shared.")]
        assert names and all(runtimes._BY_NAME[n]["first_tier"] for n in names)
        quick = {n: symbols._BOUND[n] for n in names}
    assert first.wait_optimized(timeout=120) and optimizer.wait_all(timeout=120)
    assert all(symbols._BOUND[n] != quick[n] and not runtimes._BY_NAME[n]["first_tier"] for n in names)
    assert first(x) == scriptc.script(total)(x) == x.sum()


def test_long_unoptimized_functions_are_a_module_of_their_own(monkeypatch):
    """With 1,000 lines or more of unoptimized functions, the first tier is two modules: the kernels, defining
    under names of the compile's own (external) what the second calls; then the unoptimized functions, those
    calling them and the entry points, declaring what they call in the first; inlined helpers in both."""
    from scriptc.backend.llvm.runtime import first_tier
    from tests.util import filecheck

    monkeypatch.setattr(first_tier, "SPLIT_LINES", 200)
    helper = 'define internal void @"m.quick.inlined"() alwaysinline\n{\n.2:\n  ret void\n}\n'
    refcount = 'define internal void @"scriptc.rt.retain"(i8* %".1") alwaysinline\n{\n.2:\n  ret void\n}\n'
    kernel = _function(
        "m.quick.kernel",
        [("entry", 'br label %"body"'), ("body", 'br i1 1, label %"body", label %"exit"'), ("exit", "ret void")],
    )
    shared = 'define internal void @"scriptc.rt.alloc"()\n{\nentry:\n  ret void\n}\n'
    straight = _function(
        "m.quick.body",
        [
            ("entry", 'br label %"b"'),
            ("b", 'br label %"c"'),
            (
                "c",
                'call void @"m.quick.kernel"()\n  call void @"scriptc.rt.alloc"()\n'
                '  call void @"scriptc.rt.retain"(i8* null)\n  call void @"m.quick.inlined"()\n  ret void',
            ),
        ],
    )
    entry = 'define i32 @"m.quick.entry"()\n{\nentry:\n  call void @"m.quick.body"()\n  ret i32 0\n}\n'
    glob = '@"scriptc.allocations" = external global i64\n'
    (first, fast, exports), (second, slow, _) = first_tier.first_tier_modules(
        glob + helper + refcount + kernel + shared + straight + entry, None, ["m.quick.entry"], "m.quick."
    )
    assert (fast, slow) == (False, True)
    monkeypatch.setattr(first_tier, "FAST_CODEGEN_LINES", 10)  # many kernels: none optimized by the generator
    assert [
        unoptimized
        for _, unoptimized, _ in first_tier.first_tier_modules(
            glob + helper + refcount + kernel + shared + straight + entry, None, ["m.quick.entry"], "m.quick."
        )
    ] == [True, True]
    monkeypatch.setattr(first_tier, "FAST_CODEGEN_LINES", 3000)
    assert exports == ["m.quick.kernel", "m.quick.split.scriptc.rt.alloc", "m.quick.split.scriptc.rt.retain"]
    filecheck(
        first,
        """
        CHECK: @"scriptc.allocations" = external global i64
        CHECK: define internal void @"m.quick.inlined"() alwaysinline
        CHECK: define void @"m.quick.split.scriptc.rt.retain"(i8* %".1") noinline
        CHECK: define void @"m.quick.kernel"()
        CHECK: define void @"m.quick.split.scriptc.rt.alloc"()
        CHECK-NOT: m.quick.body
        CHECK-NOT: m.quick.entry
        """,
    )
    filecheck(
        second,
        """
        CHECK: @"scriptc.allocations" = external global i64
        CHECK-DAG: declare void @"m.quick.kernel"()
        CHECK-DAG: declare void @"m.quick.split.scriptc.rt.alloc"()
        CHECK-DAG: declare void @"m.quick.split.scriptc.rt.retain"(i8* %".1")
        CHECK: define internal void @"m.quick.inlined"() alwaysinline
        CHECK: define internal void @"m.quick.body"() optnone noinline
        CHECK: call void @"m.quick.split.scriptc.rt.alloc"()
        CHECK-NEXT: call void @"m.quick.split.scriptc.rt.retain"(i8* null)
        CHECK: define i32 @"m.quick.entry"()
        CHECK-NOT: define {{.*}}kernel
        """,
    )
    state = '@"m.quick.counter" = internal global i64 0\n'  # one variable: not in two modules
    assert len(first_tier.first_tier_modules(state + kernel + straight + entry, None, [], "m.quick.")) == 1
    looping_caller = _function(
        "m.quick.caller", [("entry", 'call void @"m.quick.body"()\n  br label %"loop"'), ("loop", 'br label %"loop"')]
    )  # a kernel would lose O3's code
    assert len(first_tier.first_tier_modules(kernel + straight + looping_caller, None, [], "m.quick.")) == 1


def test_a_long_loop_free_function_alone_is_one_unoptimized_module(tmp_path, capfd):
    """With no kernel to compile with optimization, the first tier is the unoptimized code alone, one module
    (its split left an empty first module, whose linking failed with mmap's EINVAL)."""
    from scriptc.backend.llvm.runtime import first_tier
    from tests.modules import load_module

    body = "".join(f"    if a < {i}:\n        k = k + 1\n        print(k)\n" for i in range(60))
    f = load_module(tmp_path, f"@scriptc.script\ndef f(a: int) -> int:\n    k = 0\n{body}    return k\n").f
    modules = []
    real = first_tier.first_tier_modules

    def spy(*args, **kwargs):
        modules.append(real(*args, **kwargs))
        return modules[-1]

    with optimizer.held():
        from scriptc.backend.llvm import compile as compiled

        compiled.first_tier_modules = spy
        try:
            assert f(2) == f.py_func(2) == 57
        finally:
            compiled.first_tier_modules = real
    assert [[unoptimized for _, unoptimized, _ in m] for m in modules] == [[True]]
    printed = capfd.readouterr().out
    assert printed == "".join(f"{k}\n" for k in range(1, 58)) * 2


def _training_step():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "samples"))
    import mlp_digits as m

    state = m.init_state(scriptc.random.key(1), [8, 6, 5, 3])
    x, onehot = np.random.default_rng(0).random((4, 8)), np.eye(3)[[0, 2, 1, 2]]
    return scriptc.script(m.train_step.py_func), (state, x, onehot, 1e-2)


def _same_as_o3(step, args, first) -> None:
    assert step.wait_optimized(timeout=120) and tiers_of(step) == {"optimized"}
    second = step(*args)
    for a, b in zip(_leaves(first), _leaves(second), strict=True):
        np.testing.assert_array_equal(a, b)


def test_unoptimized_training_step_matches_o3(monkeypatch):
    """A training step (value_and_grad, Adam, nested NamedTuples): its long loop-free body is compiled
    unoptimized in the first tier; both tiers give identical results. (Its kernels not streamed: below.)"""
    from scriptc.backend.llvm import compile as compiled
    from scriptc.backend.llvm.runtime import first_tier as compiling, streaming

    step, args = _training_step()
    monkeypatch.setattr(streaming, "MIN_OUTLINED", 10**9)
    texts, modules = [], []
    real, real_modules = compiling.first_tier_text, compiling.first_tier_modules

    def spy(text, python_entry):
        texts.append(real(text, python_entry))
        return texts[-1]

    def spy_modules(*args, **kwargs):
        modules.append(real_modules(*args, **kwargs))
        return modules[-1]

    monkeypatch.setattr(compiling, "first_tier_text", spy)
    monkeypatch.setattr(compiled, "first_tier_modules", spy_modules)
    with optimizer.held():
        first = step(*args)
        assert tiers_of(step) == {"first"}
    monkeypatch.undo()
    # its body and CPython entry point: a module of their own, after the kernels' (one, or several on threads);
    # the kernels, 3,000 lines and more, by the unoptimizing code generator too (FAST_CODEGEN_LINES)
    assert len(modules) == 1 and len(modules[0]) >= 2 and all(unoptimized for _, unoptimized, _ in modules[0])
    assert any(
        '.quick.train_step"(' in line and "optnone" in line
        for t in texts
        for line in t.splitlines()
        if line.startswith("define")
    )  # the body, not only the CPython entry point
    _same_as_o3(step, args, first)


@pytest.mark.skipif(codegen_threads.THREADS == 1, reason="one code generation thread: nothing streams")
def test_streamed_training_step_matches_o3(monkeypatch):
    """The same step with its kernels generated while its body is lowered (streaming.py): batches of finished
    functions, each module defining its batch and declaring what it calls in earlier ones, the body in a batch
    of its own once finished, the entry points last; all unoptimized; both tiers give identical results."""
    from scriptc.backend.llvm import compile as compiling
    from scriptc.backend.llvm.runtime import streaming
    from scriptc.backend.llvm.runtime.text_builder import function_text

    submitted, streams, final = [], [], {}
    real_submit, real_stream, real_dismantle = (
        codegen_threads.Stream.submit,
        streaming.KernelStream.__init__,
        compiling._dismantle,
    )

    def dismantle(module):  # each function's text once the whole module is lowered
        final.update({fn.name: function_text(fn) for fn in module.functions if fn.blocks})
        real_dismantle(module)

    def submit(self, text, unoptimized):
        submitted.append((text, unoptimized))
        return real_submit(self, text, unoptimized)

    def init(self, *a, **kw):
        real_stream(self, *a, **kw)
        streams.append(self)

    step, args = _training_step()
    monkeypatch.setattr(codegen_threads.Stream, "submit", submit)
    monkeypatch.setattr(streaming.KernelStream, "__init__", init)
    monkeypatch.setattr(streaming, "BATCH_LINES", 300)
    monkeypatch.setattr(compiling, "_dismantle", dismantle)
    with optimizer.held():
        first = step(*args)
        assert tiers_of(step) == {"first"}
    monkeypatch.undo()
    assert len(submitted) >= 4 and all(unoptimized for _, unoptimized in submitted)
    defined = [[line for line in text.splitlines() if line.startswith("define")] for text, _ in submitted]
    body = [k for k, lines in enumerate(defined) if any('.quick.train_step"(' in line for line in lines)]
    assert body and "optnone" in next(line for line in defined[body[0]] if '.quick.train_step"(' in line)
    assert any(".quick.pyentry." in line for line in defined[-1])  # the entry points: the last module
    seen = set()
    for text, _ in submitted:  # each module calls only what it defines or an earlier one exported
        names = set(re.findall(r'^define [^@]*@"([^"]+)"', text, re.M))
        declared = set(re.findall(r'^declare [^@]*@"([^"]+)"', text, re.M))
        assert not names & seen
        assert {n for n in declared if ".quick." in n} <= seen, "calls a function no module before it defines"
        seen |= names
    (stream,) = streams
    assert stream.printed and final.keys() == stream.printed.keys()
    for name, text in stream.printed.items():  # shipped when finished: nothing changed a function after that
        assert final[name] == text, name
    _same_as_o3(step, args, first)


def _leaves(value) -> list:
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [value]


def test_kernels_in_parts_call_only_modules_linked_before_them(monkeypatch):
    """With PART_LINES of kernels or more, the first tier's kernels are in several modules, generated at once:
    each module declares only what a module before it exports, short helpers are copied where called, and the
    entry points are in the last."""
    from scriptc.backend.llvm.runtime import first_tier

    monkeypatch.setattr(first_tier, "PART_LINES", 100)
    helper = 'define internal void @"scriptc.rt.alloc"()\n{\nentry:\n  ret void\n}\n'
    loop = [
        ("entry", 'call void @"scriptc.rt.alloc"()\n  br label %"body"'),
        ("body", 'br i1 1, label %"body", label %"exit"'),
        ("exit", "ret void"),
    ]
    kernels = [_function(f"m.quick.kernel{k}", loop) for k in range(4)]
    body = _function(
        "m.quick.body",
        [
            ("entry", "".join(f'call void @"m.quick.kernel{k}"()\n  ' for k in range(4)) + 'br label %"loop"'),
            ("loop", 'br i1 1, label %"loop", label %"done"'),
            ("done", "ret void"),
        ],
    )
    entry = 'define i32 @"m.quick.entry"()\n{\nentry:\n  call void @"m.quick.body"()\n  ret i32 0\n}\n'
    modules = first_tier.first_tier_modules(
        helper + "".join(kernels) + body + entry, None, ["m.quick.entry"], "m.quick.", parts=3
    )
    assert len(modules) == 3 and not any(unoptimized for _, unoptimized, _ in modules)
    bound = set()
    for text, _, exports in modules:
        declared = set(re.findall(r'^declare .*?@"([^"]+)"', text, re.M))
        assert declared <= bound, declared - bound
        if re.search(r"^define .*kernel", text, re.M):  # copied where called, not called across modules
            assert 'define internal void @"scriptc.rt.alloc"()' in text
        bound |= set(exports)
    assert 'define i32 @"m.quick.entry"()' in modules[-1][0] and '@"m.quick.body"' in modules[-1][0]
    defined = [re.findall(r'^define .*?@"(m\.quick\.kernel\d)"', text, re.M) for text, _, _ in modules]
    assert sorted(sum(defined, [])) == [f"m.quick.kernel{k}" for k in range(4)]
    assert all(defined[:-1])  # the kernels fill the modules before the program's body


@pytest.mark.parametrize("c", corpus.CASES[::8], ids=lambda c: c.id)
def test_first_tier_in_parts_on_threads_matches_cpython(c, capfd, monkeypatch):
    """The first tier generated in parts on threads (PART_LINES made small): the same results as CPython."""
    from scriptc.backend.llvm.runtime import codegen_threads, first_tier
    from scriptc.backend.llvm import compile as compiled

    monkeypatch.setattr(first_tier, "PART_LINES", 40)
    monkeypatch.setattr(codegen_threads, "THREADS", 3)
    real = first_tier.first_tier_modules

    def counted(*args, **kwargs):
        modules = real(*args, **kwargs)
        PARTS["split" if len(modules) > 1 else "whole"] += 1
        return modules

    monkeypatch.setattr(compiled, "first_tier_modules", counted)
    f = fresh(c.fn)
    with optimizer.held():
        check(c, lambda _: f, capfd)
        assert tiers_of(f) == ({"optimized"} if f.fastmath else {"first"})


PARTS = {"split": 0, "whole": 0}


def test_the_first_tier_in_parts_ran_in_parts():
    """Run after the test above: most of its compiles really were several modules (a module of one kernel and
    short helpers is one)."""
    if PARTS["split"] + PARTS["whole"] == 0:
        pytest.skip("run with the corpus cases above")
    assert PARTS["split"] >= 0.8 * (PARTS["split"] + PARTS["whole"]), PARTS


def test_a_deleted_function_is_freed_once_optimized():
    """The optimizer's thread, waiting for its next job, no longer holds the last one (whose done() refers to
    the function) until it idles out: a notebook cell decorated again frees the previous function."""
    import gc
    import weakref

    def double(x: np.ndarray) -> np.ndarray:
        return x * 2.0 + 1.0

    f = scriptc.script(double)
    f(np.ones(3))
    assert f.wait_optimized(60)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None
