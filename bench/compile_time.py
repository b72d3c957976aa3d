"""Compile time in fresh processes: `import numpy, scriptc`, and the first call of small programs (decoration,
compile and run), with a cold and a warm on-disk cache, and cold until the O3 code replaced the first tier's
(tiered compilation); numba, jax.jit and TorchScript in the same run when they are importable (jax and
TorchScript: the seed loop and mandelbrot, written as bench/kernels.py writes them).

Each figure is the median of several fresh processes (a new interpreter per measurement, imports excluded from
the first-call figures, bytecode written and read as on a user's machine). The measurements of the different
configurations are interleaved round by round, so that a busy machine slows them alike. ``--against DIR``
adds a column for another scriptc tree (say, an older commit unpacked with ``git archive``), measured in the
same rounds. Run:

    python bench/compile_time.py [--repeats 7] [--against /tmp/old-scriptc] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

PROGRAMS = {
    "seed loop": (
        """
def f(x, n):
    for _ in range(n):
        x = x + 1.0
    return x
""",
        "np.random.rand(2, 3), 1000",
    ),
    "mandelbrot": (
        """
def f(cr, ci, maxit):
    out = np.zeros(cr.shape[0], dtype=np.int64)
    for k in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        n = 0
        while n < maxit and zr * zr + zi * zi < 4.0:
            zr, zi = zr * zr - zi * zi + cr[k], 2.0 * zr * zi + ci[k]
            n += 1
        out[k] = n
    return out
""",
        "np.linspace(-2, 1, 64), np.linspace(-1, 1, 64), 50",
    ),
    "stencil with borders": (
        """
def f(a):
    out = np.empty_like(a)
    n, m = a.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    out[0, :] = a[0, :]
    out[n - 1, :] = a[n - 1, :]
    out[:, 0] = a[:, 0]
    out[:, m - 1] = a[:, m - 1]
    return out
""",
        "np.random.rand(32, 32)",
    ),
    "row softmax": (
        """
def f(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        m = x[i, 0]
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(x.shape[1]):
            out[i, j] = np.exp(x[i, j] - m)
            s += out[i, j]
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] / s
    return out
""",
        "np.random.rand(16, 10)",
    ),
}

DECORATE = {
    "scriptc": ("import scriptc", "scriptc.script(cache={cache!r})"),
    "numba": ("import numba", "numba.njit"),
    "jax": ("import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy as jnp", "jax.jit"),
    "torch": ("import torch\ntorch.set_num_threads(1)", "torch.jit.script"),
}

# The same tasks as jax.jit and TorchScript take them: bench/kernels.py's versions (jax_versions, torch_versions),
# imported by the fresh process before the clock starts (a loop over array updates is lax.fori_loop for jax;
# mandelbrot is a masked vector iteration over the whole grid for both: neither has a compiled form of the scalar
# while loop). Arrays are converted before the clock starts; the first call's result is waited for (jax dispatches
# asynchronously). program -> (kernel in bench/kernels.py, arguments)
PEER_VERSIONS = {"jax": "jax_versions", "torch": "torch_versions"}
PEER_PROGRAMS = {
    "jax": {
        "seed loop": ("add_loop_small", "jnp.asarray(np.random.rand(2, 3)), 1000"),
        "mandelbrot": ("mandelbrot", "jnp.asarray(np.linspace(-2, 1, 64)), jnp.asarray(np.linspace(-1, 1, 64)), 50"),
    },
    "torch": {
        "seed loop": ("add_loop_small", "torch.from_numpy(np.random.rand(2, 3)), 1000"),
        "mandelbrot": (
            "mandelbrot",
            "torch.from_numpy(np.linspace(-2, 1, 64)), torch.from_numpy(np.linspace(-1, 1, 64)), 50",
        ),
    },
}
PEER_SOURCE = """
sys.path.insert(0, {bench!r})
from kernels import {versions}
f = {versions}()[{kernel!r}]
"""


RUNNER = """
import time, sys
import numpy as np
{imports}
{source}
args = ({args},)
t = time.perf_counter()
g = {decorate}(f)
r = g(*args)
{wait}
print(time.perf_counter() - t)
"""
WAIT = {"jax": "jax.block_until_ready(r)"}
SETTLE = "getattr(scriptc, 'wait_optimized', lambda: None)()"  # (a tree without tiers: its first call was O3)

IMPORT = "import time\nt = time.perf_counter()\nimport numpy, {module}\nprint(time.perf_counter() - t)"

WORK = tempfile.mkdtemp(prefix="scriptc-compile-time-")


def fresh(code: str, env: dict) -> float:
    """Run ``code`` as a script in a new interpreter (scriptc reads the function's source from its file; the same
    code is always the same file, as a user's program is, so the on-disk cache can find it)."""
    path = os.path.join(WORK, f"program_{abs(hash(code)) % 10**12}.py")
    with open(path, "w") as f:
        f.write(code)
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode is written (and then read), as on a user's machine
    out = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def importable(module: str, env: dict) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, env=env).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repeats_positional", nargs="?", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", help="another scriptc tree (a directory holding scriptc/) to measure alongside")
    parser.add_argument("--json", help="write the figures (seconds) here")
    args = parser.parse_args()
    repeats = args.repeats_positional or args.repeats
    base = dict(os.environ)
    configs = {"scriptc": ("scriptc", base)}
    if args.against:
        configs["before"] = (
            "scriptc",
            dict(
                base,
                PYTHONPATH=os.pathsep.join([os.path.abspath(args.against), base.get("PYTHONPATH", "")]).rstrip(
                    os.pathsep
                ),
            ),
        )
    for peer in ("numba", "jax", "torch"):
        if importable(peer, base):
            configs[peer] = (peer, dict(base, JAX_PLATFORMS="cpu") if peer == "jax" else base)
    cache_dirs = {name: tempfile.mkdtemp(prefix=f"scriptc-cache-{name}-") for name in configs}
    measures = []  # (row label, column, code, env)
    for name, (module, env) in configs.items():
        measures.append(("import (with NumPy)", name, IMPORT.format(module=module), env))
    for program, (source, call_args) in PROGRAMS.items():
        for label, cache in (("cold", False), ("warm cache", True)):
            for name, (module, env) in configs.items():
                if cache and module != "scriptc":
                    continue
                if module in PEER_PROGRAMS:
                    if program not in PEER_PROGRAMS[module]:
                        continue
                    kernel, call_args = PEER_PROGRAMS[module][program]
                    source = PEER_SOURCE.format(
                        bench=os.path.dirname(os.path.abspath(__file__)), versions=PEER_VERSIONS[module], kernel=kernel
                    )
                else:
                    source, call_args = PROGRAMS[program]
                imports, decorate = DECORATE[module]
                code = RUNNER.format(
                    imports=imports,
                    source=textwrap.dedent(source),
                    decorate=decorate.format(cache=cache),
                    args=call_args,
                    wait=WAIT.get(module, ""),
                )
                run_env = dict(env, SCRIPTC_CACHE_DIR=cache_dirs[name])
                if cache:
                    fresh(code, run_env)  # fills the cache
                measures.append((f"{program}: first call, {label}", name, code, run_env))
                if module == "scriptc" and not cache:  # until the O3 code is in (tiered compilation)
                    settled = RUNNER.format(
                        imports=imports,
                        source=textwrap.dedent(source),
                        decorate=decorate.format(cache=cache),
                        args=call_args,
                        wait=SETTLE,
                    )
                    measures.append((f"{program}: O3 code installed, cold", name, settled, run_env))
    times: dict[tuple, list] = {}
    for _ in range(repeats):  # round by round: a busy machine slows every configuration alike
        for row, column, code, env in measures:
            times.setdefault((row, column), []).append(fresh(code, env))
    rows: dict[str, dict] = {}
    for (row, column), values in times.items():
        rows.setdefault(row, {})[column] = statistics.median(values)
    columns = list(configs)
    print(f"{'':44}" + "".join(f"{c:>12}" for c in columns))
    for label, row in rows.items():
        print(f"{label:44}" + "".join(f"{row[c] * 1e3:10.1f}ms" if c in row else f"{'':12}" for c in columns))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
