"""The on-disk cache's source key (``scriptc/source_key.py``): a hit in a fresh process runs neither the frontend
nor the passes, and every name the compiled code depended on — a callee's source in another file, a global
constant read directly, through a module attribute or by a callee, a NamedTuple's fields — is checked again, so
that a change is a miss, never a stale result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

KERNELS = """
from typing import NamedTuple
import numpy as np
import scriptc
import helpers
from helpers import shift

SCALE = 2.0

class Stats(NamedTuple):
    total: float
    peak: float

@scriptc.script(cache=True)
def add_loop(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x + 1.0
    return shift(x) * SCALE + helpers.OFFSET

@scriptc.script(cache=True)
def stats(x):
    return Stats(np.sum(x), np.max(x))
"""

HELPERS = """
import numpy as np
import scriptc

OFFSET = 0.0
BIAS = 0.5

@scriptc.script
def shift(x: np.ndarray) -> np.ndarray:
    return x - BIAS
"""

RUN = """
import json, sys
import numpy as np
{before}
import kernels
from scriptc.backend.llvm.runtime import disk_cache
x = np.arange(5.0)
s = kernels.stats(x)
out = {{"add_loop": kernels.add_loop(x, 3).tolist(), "stats": [type(s).__name__, s.total, s.peak],
       "passes_ran": "scriptc.passes" in sys.modules, "cache": disk_cache.stats}}
{after}
print(json.dumps(out))
"""


def run(where: Path, before: str = "", after: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=f"{where}{os.pathsep}{ROOT}")
    env.pop("SCRIPTC_CACHE_DIR", None)
    proc = subprocess.run(
        [sys.executable, "-c", RUN.format(before=before, after=after)],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink()


def want(scale=2.0, bias=0.5, offset=0.0):
    x = np.arange(5.0)
    return ((x + 3.0 - bias) * scale + offset).tolist()


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "helpers.py").write_text(HELPERS)
    first = run(tmp_path)
    assert first["add_loop"] == want() and first["passes_ran"] and first["cache"]["stores"] == 2
    assert len(list((tmp_path / "__pycache__").glob("*.scm"))) == 2
    return tmp_path


def test_a_hit_runs_neither_the_frontend_nor_the_passes(project):
    result = run(project, after='out["frontend"] = bool(kernels.add_loop._graphs or kernels.stats._graphs)')
    assert result["add_loop"] == want() and result["stats"] == ["Stats", 10.0, 4.0]
    assert result["cache"]["hits"] == 2 and not result["passes_ran"] and not result["frontend"]


def test_the_graph_is_made_on_first_use_after_a_hit(project):
    show = 'out["graph"] = str(kernels.add_loop.graph_for(x, 3))'
    hit = run(project, after=show)  # (passes_ran is read before graph_for runs them)
    assert not hit["passes_ran"] and hit["cache"]["hits"] == 2
    cold = run(project, before="import scriptc.source_key as k; k.FORMAT = -1", after=show)  # no manifest read
    assert cold["passes_ran"]
    assert hit["graph"] == cold["graph"] and "aten::" in hit["graph"]


@pytest.mark.parametrize(
    "path, old, new, expect",
    [
        ("helpers.py", "x - BIAS", "x - 2 * BIAS", dict(bias=1.0)),  # a callee's source, in another file
        ("helpers.py", "BIAS = 0.5", "BIAS = 0.25", dict(bias=0.25)),  # a global a callee reads
        ("helpers.py", "OFFSET = 0.0", "OFFSET = 1.0", dict(offset=1.0)),  # a module attribute (helpers.OFFSET)
        ("kernels.py", "SCALE = 2.0", "SCALE = 3.0", dict(scale=3.0)),  # a global the function reads
    ],
)
def test_what_the_code_depended_on_changing_is_a_miss(project, path, old, new, expect):
    edit(project / path, old, new)
    result = run(project)
    assert result["add_loop"] == want(**expect)
    assert result["passes_ran"] and result["cache"]["misses"] == 1
    again = run(project)
    assert again["add_loop"] == want(**expect) and not again["passes_ran"]


def test_a_named_tuple_whose_fields_changed_is_a_miss(project):
    edit(project / "kernels.py", "    total: float\n    peak: float", "    peak: float\n    total: float")
    result = run(project)
    assert result["stats"] == ["Stats", 4.0, 10.0] and result["cache"]["misses"] == 1


def test_a_changed_scriptc_is_a_miss_of_the_source_key(project):
    """Another build of scriptc (its files' sizes and times) never trusts a manifest: the graph key decides."""
    result = run(project, before="import scriptc.source_key as k; k._BUILD.append('another build')")
    assert result["add_loop"] == want() and result["passes_ran"] and result["cache"]["hits"] == 2


@pytest.mark.parametrize("damage", [b"{not json", b"[]", b'{"format": 1}'])
def test_a_damaged_manifest_is_ignored_and_rewritten(project, damage):
    for path in (project / "__pycache__").glob("*.scm"):
        path.write_bytes(damage)
    result = run(project)
    assert result["add_loop"] == want() and result["passes_ran"] and result["cache"]["hits"] == 2
    assert not run(project)["passes_ran"]


def test_a_manifest_naming_another_entry_is_a_miss(project):
    """A manifest whose graph key names no valid entry: compiled, never a wrong function."""
    for path in (project / "__pycache__").glob("add_loop-*.scm"):
        data = json.loads(path.read_text())
        data["key"] = "0" * 64
        path.write_text(json.dumps(data))
    result = run(project)
    assert result["add_loop"] == want() and result["passes_ran"]


def test_what_cannot_be_checked_by_name_gets_no_manifest(tmp_path):
    (tmp_path / "kernels.py").write_text(
        KERNELS.replace("SCALE = 2.0", "class Config:\n    scale = 2.0\nSETTINGS = Config()").replace(
            "* SCALE", "* SETTINGS.scale"
        )
    )
    (tmp_path / "helpers.py").write_text(HELPERS)
    assert run(tmp_path)["add_loop"] == want()
    manifests = sorted(p.name.split("-")[0] for p in (tmp_path / "__pycache__").glob("*.scm"))
    assert manifests == ["stats"]  # add_loop read an instance of a class defined in the script
    assert run(tmp_path)["add_loop"] == want()
