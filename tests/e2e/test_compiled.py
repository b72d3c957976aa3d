"""The compiled-callable core (``scriptc/compiled.py``): scripted functions, gradients and batched functions share
one implementation of the per-signature caches, the disk cache, the CPython entry points and releasing the GIL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import scriptc
from scriptc.compiled import CompiledFunction
from scriptc.function import ScriptFunction
from scriptc.transforms.api import GradFunction
from scriptc.transforms.vmap_api import VmapFunction

ROOT = Path(__file__).resolve().parents[2]

KERNELS = """
import numpy as np
import scriptc
from scriptc import prange

@scriptc.script(cache=True)
def mixed(x: np.ndarray, w: float) -> float:
    return np.sum(np.sin(x) * w)

@scriptc.script(cache=True)
def doubled(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2.0
    return out

grad_mixed = scriptc.grad(mixed)
both_mixed = scriptc.value_and_grad(mixed, argnums=(0, 1))
batched = scriptc.vmap(mixed, in_axes=(0, None))
batched_doubled = scriptc.vmap(doubled)
"""

RUN = """
import json, sys
import numpy as np
import kernels
from scriptc.backend.llvm.runtime import disk_cache
x = np.linspace(0.0, 1.0, 50)
value, (gx, gw) = kernels.both_mixed(x, 2.0)
results = [kernels.grad_mixed(x, 2.0).tolist(), value, gx.tolist(), gw,
           kernels.batched(np.arange(12.0).reshape(3, 4), 0.5).tolist(),
           kernels.batched_doubled(np.arange(12.0).reshape(3, 4)).tolist(),
           [kernels.mixed(r, 0.5) for r in np.arange(12.0).reshape(3, 4)]]
print(json.dumps({"results": results, "stats": disk_cache.stats, "llvmlite": "llvmlite" in sys.modules}))
"""


def _run(where: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{where}{os.pathsep}{ROOT}")
    env.pop("SCRIPTC_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=where, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_grad_and_vmap_of_cached_functions_hit_the_disk_cache(tmp_path):
    """``cache=True`` on the function carries to its gradients and batched versions: a second process links
    their machine code without LLVM, with the same results."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert second["results"] == first["results"]
    assert second["stats"]["hits"] == 5 and second["stats"]["misses"] == 0  # 4 transforms and mixed
    assert not second["llvmlite"]
    x = np.linspace(0.0, 1.0, 50)
    assert np.allclose(first["results"][0], np.cos(x) * 2.0, rtol=0, atol=1e-15)
    # vmap: the function's result per example (its vectorised sin may be libmvec's: docs/language.md)
    np.testing.assert_array_max_ulp(np.array(first["results"][4]), np.array(first["results"][6]), maxulp=4)


@scriptc.script
def norm2(x: np.ndarray) -> float:
    return np.sum(x * x)


@scriptc.script
def doubled(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in scriptc.prange(x.shape[0]):
        out[i] = x[i] * 2.0
    return out


def test_every_compiled_callable_gets_a_cpython_entry_point():
    """After its first call, calling a scripted function, a gradient or a batched function goes straight to
    native code (the class's ``__call__`` is the JIT-built entry point, not ``_dispatch``)."""
    x = np.arange(4.0)
    for f, args, want in [
        (norm2, (x,), 14.0),
        (scriptc.grad(norm2), (x,), 2 * x),
        (scriptc.vmap(norm2), (np.stack([x, x]),), [14.0, 14.0]),
    ]:
        assert np.array_equal(f(*args), want)
        assert type(type(f).__call__).__name__ == "builtin_function_or_method", f
        assert np.array_equal(f(*args), want)  # through the entry point


def test_batched_parallel_loops_release_the_gil():
    v = scriptc.vmap(doubled)
    x = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(v(x), x * 2.0)
    assert [native.nogil for native in v._native.values()] == [True]


def test_one_implementation():
    shared = [
        "native_for_types",
        "graph_for_types",
        "_compile_native",
        "_install_entry",
        "wait_optimized",
        "inspect_llvm",
        "code_for",
        "frontend_graph_for",
    ]
    for cls in (ScriptFunction, GradFunction, VmapFunction):
        assert issubclass(cls, CompiledFunction)
        for name in shared:
            assert getattr(cls, name) is getattr(CompiledFunction, name), (cls.__name__, name)
