"""First-call time of every scripted function in ``samples/``, the benchmark kernels and the differential corpus,
in a warm process (NumPy, scriptc and LLVM already loaded), with where the time goes.

Each function is decorated afresh from its Python function (``scriptc.script(fn.py_func)``) and called once with
its sample arguments, once the background work of the compiles before it is done (``scriptc.wait_optimized``);
the figure is decoration + first call (frontend, passes, lowering, LLVM, the CPython entry
point, and the run itself), the best of ``--repeat`` fresh decorations. The phases are exclusive times measured by
wrapping scriptc's internal functions (the run itself is what is left). Run:

    python bench/first_calls.py [--repeat 3] [--top 25] [--only NAME,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "samples")]
sys.path.append(ROOT)  # last: scriptc itself may come from PYTHONPATH (another tree, --no-phases)

import scriptc  # noqa: E402

# -- phase timing: exclusive time per phase, nested calls subtracted from their callers ----------------------

_STACK: list[list] = []
TIMES: dict[str, float] = {}


def _wrap(owner, attr: str, phase: str) -> None:
    inner = getattr(owner, attr)
    is_static = isinstance(owner.__dict__.get(attr), staticmethod) if isinstance(owner, type) else False

    def timed(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return inner(*args, **kwargs)  # the optimizer's thread (O3 tier): not the first call's time
        frame = [phase, 0.0]
        _STACK.append(frame)
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent = time.perf_counter() - start
            _STACK.pop()
            TIMES[phase] = TIMES.get(phase, 0.0) + spent - frame[1]
            if _STACK:
                _STACK[-1][1] += spent

    setattr(owner, attr, staticmethod(timed) if is_static else timed)


def instrument() -> None:
    """Wrap the compiler's phases (what exists in this version of scriptc)."""
    from scriptc.frontend import FunctionEmitter
    from scriptc.passes import manager
    from scriptc.backend.llvm import compile as compiling
    from scriptc.backend.llvm.runtime import engine, entry
    from scriptc.backend.llvm.lowering import lower

    _wrap(FunctionEmitter, "build", "frontend")
    _wrap(manager.PassManager, "run", "passes")
    _wrap(lower.ModuleLowering, "entry", "lowering")
    _wrap(entry.EntryLowering, "lower", "entry")
    _wrap(engine.Engine, "optimize", "llvm opt")
    _wrap(engine.Engine, "emit_object", "llvm codegen")
    _wrap(engine.Engine, "quick_object", "llvm 1st tier")
    _wrap(compiling, "link", "link")
    _wrap(compiling, "compile_graph", "compile other")


# -- the functions ------------------------------------------------------------------------------------------


def sample_functions():
    rng = np.random.default_rng(0)
    import control_flow, dask_kernels, gpu_chain, linear_regression, loops_and_prints, prange_mandelbrot  # noqa

    x = rng.random(1000)
    yield "samples/control_flow.first_pair_above", control_flow.first_pair_above, (rng.standard_normal(8), 1.3)
    yield "samples/dask_kernels.logistic_orbit", dask_kernels.logistic_orbit, (rng.random((8, 8)), 3.7, 10)
    yield "samples/gpu_chain.chain", gpu_chain.chain, (rng.standard_normal(100),)
    yield "samples/linear_regression.fit", linear_regression.fit, (x, 3 * x - 2, 10, 0.1)
    yield "samples/loops_and_prints.f", loops_and_prints.f, (rng.random((2, 3)),)
    yield "samples/prange_mandelbrot.mandelbrot", prange_mandelbrot.mandelbrot, (30, 40, 50)
    import linreg_grad, mlp_digits, train_state  # noqa: E401  (the transforms' samples)

    yield "samples/linreg_grad.train", linreg_grad.train, (linreg_grad.Params(1.0, 0.0), x, 3 * x - 2, 0.01, 10)
    state = mlp_digits.init_state(scriptc.random.key(0), [64, 128, 256, 10])
    images = rng.random((32, 64))
    yield (
        "samples/mlp_digits.train_step",
        mlp_digits.train_step,
        (state, images, np.eye(10)[rng.integers(0, 10, 32)], 1e-3),
    )
    ts = train_state.init(scriptc.random.key(0), 32)
    xs = rng.random((16, 1))
    yield "samples/train_state.train_step", train_state.train_step, (ts, xs, np.sin(xs), 0.05, 0.1)


def bench_functions():
    from bench import kernels

    seen = set()
    for k in kernels.KERNELS:
        if k.scriptc is None or (k.scriptc, k.name) in seen or getattr(k.scriptc, "driver", False):
            continue  # (a Python driver of compiled code: its scripted functions are the samples')
        seen.add((k.scriptc, k.name))
        yield f"bench/{k.name}", k.scriptc, k.make_args(True)


def corpus_functions():
    import corpus

    corpus.load_all()
    seen = set()
    for c in corpus.CASES + corpus.ERROR_CASES:
        fn = getattr(c.fn, "py_func", None)
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        yield f"corpus/{fn.__module__.split('.')[-1]}.{fn.__name__}", c.fn, c.args_factory()


def first_call(fn, args) -> tuple[float, dict]:
    py = getattr(fn, "py_func", fn)
    scriptc.wait_optimized()  # the last compile's O3 tier, in the background, is done: a quiet warm process
    options = {k: getattr(fn, k) for k in ("fastmath", "nogil") if hasattr(fn, k)}
    TIMES.clear()
    sink = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        f = scriptc.script(py, **options)
        try:
            f(*args)
        except Exception:  # noqa: BLE001 - error cases raise on purpose: their compile is what is timed
            pass
    total = time.perf_counter() - start
    phases = dict(TIMES)
    phases["run + other"] = total - sum(phases.values())
    return total, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--no-phases", action="store_true", help="totals only (for another scriptc tree)")
    args = parser.parse_args()
    import llvmlite.binding  # noqa: F401 - a warm process: LLVM is loaded (as after numba's import)
    from scriptc.backend.llvm.runtime.engine import engine

    engine()
    if not args.no_phases:
        instrument()
    functions = [*sample_functions(), *bench_functions(), *corpus_functions()]
    if args.only:
        wanted = args.only.split(",")
        functions = [f for f in functions if any(w in f[0] for w in wanted)]
    results = []
    for label, fn, fargs in functions:
        best = None
        for _ in range(args.repeat):
            total, phases = first_call(fn, fargs)
            if best is None or total < best[0]:
                best = (total, phases)
        results.append((label, *best))
        print(f"{best[0] * 1e3:8.1f} ms  {label}", file=sys.stderr)
    results.sort(key=lambda r: -r[1])
    names = [
        "frontend",
        "passes",
        "lowering",
        "entry",
        "llvm 1st tier",
        "llvm opt",
        "llvm codegen",
        "link",
        "compile other",
        "run + other",
    ]
    print(
        f"{len(results)} functions; total {sum(r[1] for r in results) * 1e3:.0f} ms; over 150 ms: "
        f"{sum(r[1] > 0.150 for r in results)}"
    )
    print(f"{'ms':>7} " + "".join(f"{n[:10]:>11}" for n in names) + "  function")
    for label, total, phases in results[: args.top]:
        print(f"{total * 1e3:7.1f} " + "".join(f"{phases.get(n, 0.0) * 1e3:11.1f}" for n in names) + f"  {label}")
    sums = {n: sum(r[2].get(n, 0.0) for r in results) for n in names}
    print(f"{'all':>7} " + "".join(f"{sums[n] * 1e3:11.0f}" for n in names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                [
                    {"function": label, "ms": total * 1e3, **{k: v * 1e3 for k, v in phases.items()}}
                    for label, total, phases in results
                ],
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
