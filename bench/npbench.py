"""NPBench (spcl/npbench) as written: each kernel's numba version with only its decorators changed to
``@scriptc.script``, validated against the suite's NumPy version and timed beside numba and NumPy.

    python -m bench.npbench --npbench /path/to/npbench [--preset S] [--only gemm,syrk] [--repeats 5]

The suite is read from the checkout given on the command line; its code is never copied into this repository.
For every ``bench_info/*.json``: the inputs come from the kernel's ``initialize`` with the preset's parameters;
the NumPy version runs on copies of them and is the reference (its result and the arrays it writes); scriptc's
version is the ``*_numba_n.py`` file with each ``@nb.jit(...)``/``@numba.njit(...)`` line replaced by
``@scriptc.script`` and ``nb.prange`` by ``scriptc.prange``, written to a temporary module (scriptc compiles from
source files). A kernel is ``ok`` when every result is ``np.allclose`` to NumPy's (rtol 1e-5, atol 1e-8, NaN equal
to NaN), or to numba's where the suite's numba version computes something else than its NumPy version (mlp's
softmax takes a column's maximum for every row: both give NaN). Times are the best of ``--repeats`` calls by
thread CPU time, after a warm-up call (and, for scriptc, ``scriptc.wait_optimized()``), one thread each (run with
SCRIPTC_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 for the published figures).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

TRACE = False
DECORATOR = re.compile(r"^(\s*)@(nb|numba)\.(jit|njit)\b.*$", re.MULTILINE)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _copies(values):
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]


def _timed(fn, args, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        fresh = _copies(args)
        start = time.thread_time()
        fn(*fresh)
        best = min(best, time.thread_time() - start)
    return best


def _results(fn, args, array_names, names):
    """(returned value, the arrays it may have written) of one call on copies of the inputs."""
    fresh = _copies(args)
    out = fn(*fresh)
    written = [fresh[names.index(a)] for a in array_names if a in names]
    return out, written


def _close(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True))


def _agree(got, want, written) -> bool:
    """The same result and written arrays (a version that returns nothing writes its output argument, which is
    compared: adi's numba version)."""
    same_result = (got[0] is None and bool(written)) or _close(got[0], want[0])
    return same_result and all(_close(a, b) for a, b in zip(got[1], want[1]))


def scripted_source(numba_source: str) -> str:
    text = DECORATOR.sub(lambda m: f"{m.group(1)}@scriptc.script", numba_source)
    text = re.sub(r"\b(nb|numba)\.prange\b", "scriptc.prange", text)
    return "import scriptc\n" + text


def run_kernel(root: Path, info: dict, preset: str, repeats: int, work: Path, scriptc, numba) -> dict:
    bench = info["benchmark"]
    where = next((root / "npbench" / "benchmarks").rglob(bench["relative_path"]))
    module, func = bench["module_name"], bench["func_name"]
    params = bench["parameters"][preset]
    values = dict(params)
    if "init" in bench:  # (kernels without one take the parameters themselves: mandelbrot)
        init = _load(where / f"{module}.py", f"npb_{module}_init")
        made = getattr(init, bench["init"]["func_name"])(*[params[p] for p in bench["init"]["input_args"]])
        made = made if isinstance(made, tuple) else (made,)
        values.update(zip(bench["init"]["output_args"], made))
    names = bench["input_args"]
    args = [values[n] for n in names]
    written = bench.get("output_args", [])
    reference = getattr(_load(where / f"{module}_numpy.py", f"npb_{module}_numpy"), func)
    want = _results(reference, args, written, names)
    row = {"kernel": module, "numpy": _timed(reference, args, repeats)}
    numba_file = where / f"{module}_numba_n.py"
    if not numba_file.exists():
        row["status"] = "no numba version"
        return row
    numba_results = None
    if numba is not None:
        try:
            fn = getattr(_load(numba_file, f"npb_{module}_numba"), func)
            numba_results = _results(fn, args, written, names)
            row["numba"] = _timed(fn, args, repeats)
        except Exception as e:  # (numba's own failures are reported, not fatal)
            row["numba_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    path = work / f"npb_{module}_scriptc.py"
    path.write_text(scripted_source(numba_file.read_text()))
    try:
        fn = getattr(_load(path, f"npb_{module}_scriptc"), func)
        got = _results(fn, args, written, names)
        scriptc.wait_optimized()
        row["status"] = (
            "ok"
            if _agree(got, want, written)
            else "ok: as numba (its version differs from NumPy's)"
            if numba_results is not None and _agree(got, numba_results, written)
            else "WRONG RESULT"
        )
        row["scriptc"] = _timed(fn, args, repeats)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["status"] = f"{type(e).__name__}: {first}"[:160]
        if TRACE:
            traceback.print_exc()
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.npbench", description=__doc__.strip().splitlines()[0])
    p.add_argument("--npbench", required=True, help="a checkout of spcl/npbench")
    p.add_argument("--preset", default="S", choices=["S", "M", "L", "paper"])
    p.add_argument("--only", default="", help="comma-separated kernel module names")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--trace", action="store_true", help="print the traceback of each kernel that fails")
    opts = p.parse_args(argv)
    global TRACE
    TRACE = opts.trace
    root = Path(opts.npbench)
    import scriptc

    try:
        import numba
    except ImportError:
        numba = None
    only = {n for n in opts.only.split(",") if n}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        for path in sorted((root / "bench_info").glob("*.json")):
            info = json.loads(path.read_text())
            if only and info["benchmark"]["module_name"] not in only:
                continue
            row = run_kernel(root, info, opts.preset, opts.repeats, Path(tmp), scriptc, numba)
            rows.append(row)
            ratio = f"{row['scriptc'] / row['numba']:.2f}" if "scriptc" in row and "numba" in row else "-"
            vs_numpy = f"{row['scriptc'] / row['numpy']:.2f}" if "scriptc" in row else "-"
            print(
                f"{row['kernel']:28s} {row.get('status', ''):40.40s} scriptc/numba {ratio:>6s}  "
                f"scriptc/numpy {vs_numpy:>6s}",
                flush=True,
            )
    timed = [r for r in rows if r.get("status", "").startswith("ok") and "numba" in r]
    if timed:
        geo = math.exp(sum(math.log(r["scriptc"] / r["numba"]) for r in timed) / len(timed))
        geo_np = math.exp(sum(math.log(r["scriptc"] / r["numpy"]) for r in timed) / len(timed))
        at_or_below = sum(r["scriptc"] <= r["numba"] for r in timed)
        print(
            f"\n{len(timed)} of {len(rows)} kernels compile and validate; geometric mean scriptc/numba "
            f"{geo:.2f}, scriptc/numpy {geo_np:.2f}; {at_or_below} at or below numba's time"
        )
    wrong = [r["kernel"] for r in rows if r.get("status") == "WRONG RESULT"]
    if wrong:
        print("wrong results:", ", ".join(wrong))
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
