"""Time every kernel under every available implementation and compare them with scriptc.

    python -m bench [--quick] [--only KERNEL[,..]] [--impl scriptc,numpy,numba,torch,jax] [--timeout S]

Prints a Markdown table and writes bench/results/results.{md,json,png}. See bench/README.md.
"""

import argparse
import contextlib
import datetime
import importlib
import itertools
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import timeit
import traceback
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # before jax is imported: no GPU/TPU probing

import numpy as np  # noqa: E402

from . import kernels as K  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
IMPL_ORDER = ["scriptc", "python", "numpy", "numba", "torch", "jax"]
LABELS = {
    "scriptc": "scriptc",
    "python": "python",
    "numpy": "numpy",
    "numba": "numba @njit",
    "torch": "torch.jit.script",
    "jax": "jax.jit",
}
COLORS = {
    "scriptc": "#d62728",
    "python": "#7f7f7f",
    "numpy": "#1f77b4",
    "numba": "#2ca02c",
    "torch": "#ff7f0e",
    "jax": "#9467bd",
}
# --impl names -> implementations ("numpy" is the eager baseline: NumPy or, for scalar loops, plain Python)
IMPL_GROUPS = {
    "scriptc": ["scriptc"],
    "numpy": ["numpy", "python"],
    "python": ["python"],
    "numba": ["numba"],
    "torch": ["torch"],
    "jax": ["jax"],
}
SLOW_CALL = 1.0  # s: calls slower than this get only a few single-call samples


# ------------------------------------------------------------------------------------------------
# time budget: SIGALRM raises inside Python-level code (the scriptc interpreter, CPython loops).
# Native code (numba, XLA, TorchScript, a native scriptc) is only interrupted when it returns.
# ------------------------------------------------------------------------------------------------
class BudgetExceeded(BaseException):
    """A BaseException, so that no `except Exception` in the code under test swallows it."""


@contextlib.contextmanager
def budget(seconds: float):
    def on_alarm(signum, frame):
        raise BudgetExceeded()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def timed_call(fn, args, seconds):
    with budget(seconds):
        t0 = time.perf_counter()
        result = fn(*args)
        return time.perf_counter() - t0, result


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------
@dataclass
class Row:
    kernel: str
    impl: str
    status: str = "ok"  # ok | failed (wrong result) | timeout | error | skipped
    median: float | None = None  # seconds per call (compile_time: per fresh compile + first call)
    first: float | None = None  # seconds: decorate/jit + first call (includes compilation)
    samples: int = 0
    number: int = 0  # calls per sample
    note: str = ""


def fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1.0:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_ratio(r: float) -> str:
    return f"{r:.3g}" if r >= 0.01 else f"{r:.2g}"


def ratio(row: Row, base: Row | None, timeout: float) -> str:
    """Peer time / scriptc time (>1: the peer is slower). Bounds when one side ran out of time."""
    if row.impl == "scriptc":
        return "1" if row.status in ("ok", "failed") else ""
    if base is None or row.status in ("error", "skipped"):
        return ""
    if base.status in ("error", "skipped"):
        return "—"
    base_over = base.status == "timeout"
    row_over = row.status == "timeout"
    if base_over and row_over:
        return "?"
    if base_over:  # scriptc took > timeout per call
        return "< " + fmt_ratio(row.median / timeout)
    if row_over:
        return "> " + fmt_ratio(timeout / base.median)
    return fmt_ratio(row.median / base.median)


# ------------------------------------------------------------------------------------------------
# peers
# ------------------------------------------------------------------------------------------------
def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:200]


class Peers:
    """Imports each wanted peer once; `notes` says why one is missing."""

    def __init__(self, wanted: set[str], threads: int):
        self.threads = threads
        self.notes: dict[str, str] = {}
        self.versions: dict[str, str] = {"numpy": np.__version__}
        self.scriptc = self.numba = self.torch = self.jax = None
        self.torch_fns: dict = {}
        self.jax_fns: dict = {}
        import llvmlite

        self.versions["llvmlite"] = llvmlite.__version__
        if "scriptc" in wanted:
            self.scriptc = self._try("scriptc", lambda: importlib.import_module("scriptc"))
        if "numba" in wanted:
            self.numba = self._try("numba", lambda: importlib.import_module("numba"))
        if "torch" in wanted:
            self.torch = self._try("torch", self._load_torch)
        if "jax" in wanted:
            self.jax = self._try("jax", self._load_jax)

    def _try(self, name, load):
        try:
            mod = load()
        except Exception as e:  # ImportError, or a broken install
            self.notes[name] = f"{LABELS[name]} skipped: not importable ({_first_line(e)})"
            return None
        self.versions.setdefault(name, getattr(mod, "__version__", "?"))
        return mod

    def _load_torch(self):
        import torch

        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.jit.*")
        if self.threads > 0:
            torch.set_num_threads(self.threads)
        self.torch_fns = K.torch_versions()
        n = torch.get_num_threads()
        self.versions["torch"] = f"{torch.__version__} ({n} thread{'s' if n != 1 else ''})"
        return torch

    def _load_jax(self):
        if self.threads == 1 and "XLA_FLAGS" not in os.environ:
            # XLA:CPU otherwise runs some ops on a thread pool the size of the machine
            os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        import jax

        jax.config.update("jax_enable_x64", True)
        self.jax_fns = K.jax_versions()
        devices = ", ".join(str(d) for d in jax.devices())
        threads = "1 thread" if "intra_op_parallelism_threads=1" in os.environ.get("XLA_FLAGS", "") else "XLA threads"
        self.versions["jax"] = (
            f"{jax.__version__} (jaxlib {importlib.import_module('jaxlib').__version__}, {devices}, {threads})"
        )
        return jax


# ------------------------------------------------------------------------------------------------
# implementations
# ------------------------------------------------------------------------------------------------
@dataclass
class Impl:
    build: Callable[[], Callable]  # decorate / jit (timed as part of the first call)
    convert: Callable = lambda args: args  # NumPy arguments -> the peer's (not timed)
    to_numpy: Callable = lambda r: r  # the peer's result -> NumPy, for the check (not timed)
    warmup: int = 1  # calls after the first one before timing
    settle: Callable = lambda: None  # before the warm-up calls: scriptc's O3 tier is installed


def _torch_in(torch):
    return lambda args: tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)


def _torch_out(torch):
    def out(r):
        if isinstance(r, tuple):
            return tuple(out(v) for v in r)
        return r.numpy() if isinstance(r, torch.Tensor) else r

    return out


def _jax_in(jax):
    return lambda args: tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)


def _jax_out(r):
    if isinstance(r, tuple):
        return tuple(_jax_out(v) for v in r)
    return np.asarray(r)


def make_impl(kernel: K.Kernel, name: str, peers: Peers) -> Impl | str:
    """The implementation, or a string saying why there is none."""
    if name == "scriptc":
        if peers.scriptc is None:
            return peers.notes.get("scriptc", "not importable")
        settle = peers.scriptc.wait_optimized  # the first call ran the first tier's code (optimizer.py)
        if getattr(kernel.scriptc, "driver", False):  # Python driving compiled code: used as it is
            return Impl(build=lambda: kernel.scriptc, settle=settle)
        return Impl(build=lambda: peers.scriptc.script(kernel.scriptc), settle=settle)
    if name in ("python", "numpy"):
        fn = kernel.eager.get(name)
        if fn is None:
            return None  # not a row for this kernel
        return Impl(build=lambda: fn)
    if name == "numba":
        if peers.numba is None:
            return peers.notes.get("numba", "not importable")
        return Impl(build=lambda: peers.numba.njit(kernel.numba))
    if name == "torch":
        if peers.torch is None:
            return peers.notes.get("torch", "not importable")
        fn = peers.torch_fns.get(kernel.name)
        if fn is None:
            return K.TORCH_SKIPPED.get(kernel.name, "no TorchScript version")
        torch = peers.torch
        if kernel.name in K.TORCH_EAGER:  # torch.func / autograd: eager PyTorch, as the articles run it
            return Impl(build=lambda: fn, convert=_torch_in(torch), to_numpy=_torch_out(torch))
        return Impl(
            build=lambda: torch.jit.script(fn), convert=_torch_in(torch), to_numpy=_torch_out(torch), warmup=3
        )  # the profiling executor specializes after the first runs
    if name == "jax":
        if peers.jax is None:
            return peers.notes.get("jax", "not importable")
        fn = peers.jax_fns.get(kernel.name)
        if fn is None:
            return K.JAX_SKIPPED.get(kernel.name, "no JAX version")
        jax = peers.jax

        def build():
            jitted = fn if kernel.name in K.JAX_DRIVERS else jax.jit(fn)
            return lambda *args: jax.block_until_ready(jitted(*args))

        return Impl(build=build, convert=_jax_in(jax), to_numpy=_jax_out)
    raise ValueError(name)


# ------------------------------------------------------------------------------------------------
# measuring
# ------------------------------------------------------------------------------------------------
@dataclass
class Options:
    quick: bool
    timeout: float
    repeat: int  # samples for fast calls
    slow_repeat: int  # samples for calls slower than SLOW_CALL
    target: float  # seconds per sample for fast calls (calls per sample chosen to reach it)
    threads: int = 1  # torch/XLA threads (0: library defaults)


def sample(fn, args, opts: Options, warm_time: float) -> tuple[list[float], int]:
    """Per-call times: `repeat` samples of `number` calls each, `number` chosen so that a sample takes
    about `opts.target` (like timeit.Timer.autorange); calls slower than SLOW_CALL are sampled one by one."""
    if warm_time >= SLOW_CALL:
        times = [warm_time]
        for _ in range(opts.slow_repeat - 1):
            times.append(timed_call(fn, args, opts.timeout)[0])
        return times, 1
    names = [f"a{i}" for i in range(len(args))]
    timer = timeit.Timer(f"fn({', '.join(names)})", globals={"fn": fn, **dict(zip(names, args))})
    number = 1
    for n in (int(m * 10**e) for e in itertools.count() for m in (1, 2, 5)):
        number = n
        if timer.timeit(n) >= opts.target:
            break
    return [t / number for t in timer.repeat(opts.repeat, number)], number


def run_impl(kernel: K.Kernel, name: str, impl: Impl, args: tuple, ref, opts: Options):
    """Returns (row, NumPy result of the first call or None)."""
    row = Row(kernel.name, name)
    cargs = impl.convert(args)
    fn = None

    def first():
        nonlocal fn
        fn = impl.build()
        return fn(*cargs)

    try:
        row.first, result = timed_call(first, (), opts.timeout)
    except BudgetExceeded:
        row.status, row.note = "timeout", f"first call > {opts.timeout:g} s"
        return row, None
    except Exception as e:
        row.status, row.note = "error", _first_line(e)
        traceback.print_exc(limit=-3)
        return row, None
    first_result = impl.to_numpy(result)
    warm_time = row.first
    impl.settle()
    try:
        for _ in range(impl.warmup):
            warm_time, result = timed_call(fn, cargs, opts.timeout)
    except BudgetExceeded:
        row.status, row.note = "timeout", f"a warm call took > {opts.timeout:g} s"
        return row, first_result
    except Exception as e:
        row.status, row.note = "error", "warm call: " + _first_line(e)
        return row, first_result
    if ref is not None:
        problems = [p for p in (kernel.check(first_result, ref), kernel.check(impl.to_numpy(result), ref)) if p]
        if problems:
            row.status, row.note = "failed", f"**FAILED**: wrong result, {problems[0]}"
    else:
        row.note = "unchecked (no reference result)"
    try:
        times, row.number = sample(fn, cargs, opts, warm_time)
    except BudgetExceeded:
        row.status, row.note = "timeout", f"a call took > {opts.timeout:g} s"
        return row, first_result
    row.median, row.samples = statistics.median(times), len(times)
    return row, first_result


def bench_kernel(kernel: K.Kernel, impls: list[str], peers: Peers, opts: Options, log) -> list[Row]:
    args = kernel.make_args(opts.quick)
    rows: dict[str, Row] = {}
    made = {name: make_impl(kernel, name, peers) for name in IMPL_ORDER}
    made = {name: m for name, m in made.items() if m is not None}  # None: no such row for this kernel
    # the oracle first: its first call's result is the reference
    ref = None
    ref_impl = made.get(kernel.reference)
    if kernel.reference in impls:
        row, ref = run_impl(kernel, kernel.reference, ref_impl, args, None, opts)
        row.note = row.note.replace("unchecked (no reference result)", "reference")
        rows[kernel.reference] = row
        log(row)
    else:
        try:
            ref = timed_call(ref_impl.build(), args, opts.timeout)[1]
        except BaseException as e:  # noqa: B036 (BudgetExceeded too)
            log(f"[{kernel.name}] reference '{kernel.reference}' unavailable ({type(e).__name__}): results unchecked")
    for name in IMPL_ORDER:
        if name not in impls or name in rows or name not in made:
            continue
        m = made[name]
        if isinstance(m, str):
            rows[name] = Row(kernel.name, name, status="skipped", note=m)
        else:
            rows[name], _ = run_impl(kernel, name, m, args, ref, opts)
        log(rows[name])
    return [rows[n] for n in IMPL_ORDER if n in rows]


def bench_compile_time(kernel: K.Kernel, impls: list[str], peers: Peers, opts: Options, log) -> list[Row]:
    """First call (decorate + compile + a tiny run) of a fresh copy of a 20-line loop nest, scriptc vs numba.
    Every measurement execs the source from a new temporary file, so no compiler cache can help."""
    args = kernel.make_args(opts.quick)
    reps = 3 if opts.quick else 7
    tmp = tempfile.TemporaryDirectory(prefix="scriptc-bench-")
    counter = itertools.count()

    def fresh():
        i = next(counter)
        path = os.path.join(tmp.name, f"loop_nest_{i}.py")
        with open(path, "w") as f:
            f.write(K.COMPILE_TIME_SOURCE)
        ns = {"__name__": f"scriptc_bench_compile_{i}", "__file__": path}
        exec(compile(K.COMPILE_TIME_SOURCE, path, "exec"), ns)
        return ns[K.COMPILE_TIME_FUNCTION]

    ref = fresh()(*args)
    compilers = {"scriptc": peers.scriptc and peers.scriptc.script, "numba": peers.numba and peers.numba.njit}
    rows = []
    with tmp:
        for name in IMPL_ORDER:
            if name not in impls:
                continue
            if name not in compilers:
                continue  # compile_time compares scriptc and numba only
            if compilers[name] is None:
                rows.append(Row(kernel.name, name, status="skipped", note=peers.notes.get(name, "not importable")))
                log(rows[-1])
                continue
            row = Row(kernel.name, name, samples=reps, number=1, note=f"median of {reps} fresh functions")
            decorate = compilers[name]
            times = []
            try:
                timed_call(lambda: decorate(fresh())(*args), (), opts.timeout)
                for _ in range(reps):
                    f = fresh()
                    t, result = timed_call(lambda: decorate(f)(*args), (), opts.timeout)
                    times.append(t)
                    problem = kernel.check(result, ref)
                    if problem:
                        row.status, row.note = "failed", f"**FAILED**: wrong result, {problem}"
            except BudgetExceeded:
                row.status, row.note = "timeout", f"a first call took > {opts.timeout:g} s"
            except Exception as e:
                row.status, row.note = "error", _first_line(e)
                traceback.print_exc(limit=-3)
            if times and row.status != "timeout":
                row.median, row.samples = statistics.median(times), len(times)
            rows.append(row)
            log(row)
    return rows


# ------------------------------------------------------------------------------------------------
# output
# ------------------------------------------------------------------------------------------------
def markdown(rows: list[Row], env: dict, notes: list[str], opts: Options, kernel_list: list[K.Kernel]) -> str:
    out = ["# scriptc benchmarks", ""]
    out.append(
        f"{env['date']} · {'quick' if opts.quick else 'full'} run · per-call budget {opts.timeout:g} s · "
        + " · ".join(f"{k} {v}" for k, v in env["versions"].items())
    )
    out.append(
        f"Python {env['python']} on {env['platform']}, {env['cpus']} CPUs; "
        f"torch/XLA threads: {opts.threads or 'library defaults'} (numpy, numba @njit, scriptc: 1)"
    )
    out += ["", "Kernels:", ""]
    for k in kernel_list:
        out.append(f"- `{k.name}` ({k.size(opts.quick)}): {k.what}")
    out += [
        "",
        "*median*: time per call after warm-up (call_overhead: per call; compile_time: decorate + first "
        "call of a fresh function). *first call*: decorate/jit + first call, compilation included. "
        "*vs scriptc*: implementation's median / scriptc's median, >1 means the peer is slower; "
        "`<`/`>` are bounds where one side exceeded the per-call budget.",
        "",
    ]
    out.append("| kernel | implementation | median | first call | vs scriptc | notes |")
    out.append("|---|---|---:|---:|---:|---|")
    by_kernel: dict[str, list[Row]] = {}
    for r in rows:
        by_kernel.setdefault(r.kernel, []).append(r)
    for kname, krows in by_kernel.items():
        base = next((r for r in krows if r.impl == "scriptc"), None)
        for i, r in enumerate(krows):
            med = {"timeout": f"timeout (>{opts.timeout:g} s)", "error": "ERROR", "skipped": "skipped"}.get(
                r.status, fmt_time(r.median)
            )
            if r.status == "failed":
                med = f"**FAILED** {fmt_time(r.median)}"
            if r.status == "error":
                med = "**ERROR**"
            label = "torch eager" if r.impl == "torch" and kname in K.TORCH_EAGER else LABELS[r.impl]
            out.append(
                f"| {kname if i == 0 else ''} | {label} | {med} | {fmt_time(r.first)} | "
                f"{ratio(r, base, opts.timeout)} | {r.note.replace('|', '/')} |"
            )
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def plot(rows: list[Row], opts: Options, path: Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = list(dict.fromkeys(r.kernel for r in rows))
    impls = [i for i in IMPL_ORDER if any(r.impl == i and r.status in ("ok", "failed", "timeout") for r in rows)]
    if not kernels or not impls:
        return
    by = {(r.kernel, r.impl): r for r in rows}
    fig, ax = plt.subplots(figsize=(max(9.0, 1.5 * len(kernels) + 2), 6.5))
    width = 0.84 / len(impls)
    heights = [r.median for r in rows if r.median] + [opts.timeout for r in rows if r.status == "timeout"]
    lo = min(heights)
    for j, impl in enumerate(impls):
        for i, k in enumerate(kernels):
            r = by.get((k, impl))
            if r is None or r.status not in ("ok", "failed", "timeout"):
                continue
            xpos = i - 0.42 + width * (j + 0.5)
            h = opts.timeout if r.status == "timeout" or r.median is None else r.median
            kw = dict(hatch="///", alpha=0.35) if r.status == "timeout" else {}
            ax.bar(
                xpos,
                h,
                width,
                color=COLORS[impl],
                edgecolor="black",
                linewidth=0.4,
                **kw,
                label=LABELS[impl] if i == next(n for n, kk in enumerate(kernels) if (kk, impl) in by) else None,
            )
            label = {"timeout": f">{opts.timeout:g} s", "failed": "FAILED " + fmt_time(r.median)}.get(
                r.status, fmt_time(r.median)
            )
            ax.text(
                xpos,
                h * 1.15,
                label,
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=6.5,
                color="red" if r.status == "failed" else "black",
                fontweight="bold" if r.status == "failed" else None,
            )
    ax.set_yscale("log")
    ax.set_ylim(lo / 3, max(heights) * 40)
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels(
        [k + ("\n(decorate + first call)" if k == "compile_time" else "") for k in kernels], rotation=20, ha="right"
    )
    ax.set_ylabel("median time per call, seconds (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(ncol=len(impls), fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.strip().splitlines()[0])
    p.add_argument(
        "--only", default="", help="comma-separated kernels (default: all): " + ", ".join(k.name for k in K.KERNELS)
    )
    p.add_argument(
        "--impl",
        default="",
        help="comma-separated implementations (default: all): "
        + ", ".join(IMPL_GROUPS)
        + " ('numpy' includes the plain-Python loops)",
    )
    p.add_argument("--quick", action="store_true", help="sizes / 10, fewer repeats: a smoke run")
    p.add_argument("--timeout", type=float, default=10.0, help="per-call budget in seconds (default 10)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads; 1 also makes XLA single-threaded (default 1, like numpy, numba @njit, scriptc; "
        "0: the libraries' defaults)",
    )
    p.add_argument("--out", default=str(RESULTS_DIR), help="output folder (default bench/results)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    kernel_list = K.KERNELS
    if a.only:
        names = [n.strip() for n in a.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in K.KERNELS_BY_NAME]
        if unknown:
            sys.exit(f"unknown kernel(s): {', '.join(unknown)}; choose from {', '.join(K.KERNELS_BY_NAME)}")
        kernel_list = [K.KERNELS_BY_NAME[n] for n in names]
    impls = IMPL_ORDER
    if a.impl:
        groups = [g.strip() for g in a.impl.split(",") if g.strip()]
        unknown = [g for g in groups if g not in IMPL_GROUPS]
        if unknown:
            sys.exit(f"unknown implementation(s): {', '.join(unknown)}; choose from {', '.join(IMPL_GROUPS)}")
        impls = [i for i in IMPL_ORDER if any(i in IMPL_GROUPS[g] for g in groups)]
    opts = Options(
        quick=a.quick,
        timeout=a.timeout,
        repeat=3 if a.quick else 5,
        slow_repeat=1 if a.quick else 3,
        target=0.05 if a.quick else 0.2,
        threads=a.threads,
    )

    t_start = time.perf_counter()
    peers = Peers(set(impls), a.threads)
    notes = list(peers.notes.values())  # peers that could not be imported
    for n in notes:
        print(f"note: {n}", file=sys.stderr)

    def log(r):
        if isinstance(r, str):
            print(r, file=sys.stderr, flush=True)
            return
        what = {"ok": fmt_time(r.median), "failed": f"FAILED {fmt_time(r.median)}"}.get(r.status, r.status.upper())
        extra = f" (first call {fmt_time(r.first)})" if r.first is not None else ""
        print(
            f"[{r.kernel}] {LABELS[r.impl]}: {what}{extra}{'  ' + r.note if r.note else ''}",
            file=sys.stderr,
            flush=True,
        )

    rows: list[Row] = []
    for kernel in kernel_list:
        bench = bench_compile_time if kernel.name == "compile_time" else bench_kernel
        rows += bench(kernel, impls, peers, opts, log)

    env = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": peers.versions,
    }
    text = markdown(rows, env, notes, opts, kernel_list)
    if not a.only:  # memory is not a timing row: its own table (bench/raise_memory.py)
        from . import raise_memory

        text += "\n## A raising-call loop's memory\n\n" + raise_memory.table(2_000 if opts.quick else 20_000)
    print(text)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(text)
    (out / "results.json").write_text(
        json.dumps(
            {"env": env, "quick": opts.quick, "timeout": opts.timeout, "rows": [asdict(r) for r in rows]}, indent=1
        )
    )
    title = (
        f"scriptc benchmarks ({'quick' if opts.quick else 'full'} run, {env['date']}); "
        f"hatched: exceeded the {opts.timeout:g} s per-call budget"
    )
    try:
        plot(rows, opts, out / "results.png", title)
    except ImportError as e:
        print(f"note: no chart ({_first_line(e)})", file=sys.stderr)
    print(
        f"wrote {out / 'results.md'}, results.json, results.png in {time.perf_counter() - t_start:.0f} s",
        file=sys.stderr,
    )
    bad = [r for r in rows if r.status == "failed" or (r.impl == "scriptc" and r.status == "error")]
    if bad:
        print(
            "\n!!! FAILED: " + ", ".join(f"{r.kernel}/{LABELS[r.impl]} ({r.status})" for r in bad) + " !!!",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
