"""JAX's values for the tests, computed in a child process (float64: ``jax_enable_x64``): JAX starts threads,
and a test process that forks later (multiprocessing, the fork tests of the tiers and the cache) must not
carry them. ``jax_values(module, expressions)`` imports ``module`` (with ``jax``, ``jnp`` and ``np``) in the
child and returns each expression's value: a float, or a NumPy array for an array or a tuple of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

_CHILD = r"""
import json, sys
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import importlib
names = vars(importlib.import_module(sys.argv[1]))
names.update(jax=jax, jnp=jnp, np=np, nan=float("nan"), inf=float("inf"))

def encode(v):
    if isinstance(v, (tuple, list)):
        return [encode(x) for x in v]
    a = np.asarray(v)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "bits": a.astype(np.float64).tolist()} if a.ndim \
        else float(a)

print(json.dumps([encode(eval(e, names)) for e in json.loads(sys.stdin.read())]))
"""


def _decode(v):
    if isinstance(v, list):
        return tuple(_decode(x) for x in v)
    if isinstance(v, dict):
        return np.asarray(v["bits"], dtype=np.float64).astype(v["dtype"]).reshape(v["shape"])
    return v


def jax_values(module: str, expressions: list[str]) -> list:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu")
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, module],
        input=json.dumps(expressions),
        text=True,
        capture_output=True,
        env=env,
        timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"the JAX reference process failed:\n{run.stderr}")
    return [_decode(v) for v in json.loads(run.stdout)]
