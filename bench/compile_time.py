"""Compile time in fresh processes: `import scriptc`, and the first call of small programs (compile + run),
with a cold and a warm on-disk cache; numba, jax and TorchScript in the same run when they are importable.

Each figure is the median of several fresh processes (a new interpreter per measurement, imports excluded from
the first-call figures). Run:
    python bench/compile_time.py [repeats]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

PROGRAMS = {
    "seed loop": ("""
def f(x, n):
    for _ in range(n):
        x = x + 1.0
    return x
""", "np.random.rand(2, 3), 1000"),
    "mandelbrot": ("""
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
""", "np.linspace(-2, 1, 64), np.linspace(-1, 1, 64), 50"),
    "stencil with borders": ("""
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
""", "np.random.rand(32, 32)"),
    "row softmax": ("""
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
""", "np.random.rand(16, 10)"),
}

DECORATE = {
    "scriptc": ("import scriptc", "scriptc.script(cache={cache!r})"),
    "numba": ("import numba", "numba.njit"),
}

RUNNER = """
import time, sys
import numpy as np
{imports}
{source}
g = {decorate}(f)
args = ({args},)
t = time.perf_counter()
g(*args)
print(time.perf_counter() - t)
"""


WORK = tempfile.mkdtemp(prefix="scriptc-compile-time-")


def fresh(code: str, env=None) -> float:
    """Run ``code`` as a script in a new interpreter (scriptc reads the function's source from its file; the same
    code is always the same file, as a user's program is, so the on-disk cache can find it)."""
    path = os.path.join(WORK, f"program_{abs(hash(code)) % 10 ** 12}.py")
    with open(path, "w") as f:
        f.write(code)
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # bytecode is written (and then read), as on a user's machine
    out = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def import_time(module: str) -> float:
    return fresh(f"import time\nt = time.perf_counter()\nimport numpy, {module}\nprint(time.perf_counter() - t)")


def importable(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def main(repeats: int = 5) -> None:
    peers = [p for p in DECORATE if importable(p)]
    rows = [("import (with NumPy)", {p: statistics.median(import_time(p) for _ in range(repeats)) for p in peers})]
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, SCRIPTC_CACHE_DIR=cache_dir)
        for name, (source, args) in PROGRAMS.items():
            for label, cache in (("cold", False), ("warm cache", True)):
                row = {}
                for peer in peers:
                    if label == "warm cache" and peer != "scriptc":
                        continue
                    imports, decorate = DECORATE[peer]
                    code = RUNNER.format(imports=imports, source=textwrap.dedent(source),
                                         decorate=decorate.format(cache=cache), args=args)
                    if cache:
                        fresh(code, env)        # fills the cache
                    row[peer] = statistics.median(fresh(code, env) for _ in range(repeats))
                rows.append((f"{name}: first call, {label}", row))
    print(f"{'':44}" + "".join(f"{p:>12}" for p in peers))
    for label, row in rows:
        print(f"{label:44}" + "".join(f"{row[p] * 1e3:10.1f}ms" if p in row else f"{'':12}" for p in peers))
    print(json.dumps({label: row for label, row in rows}))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
