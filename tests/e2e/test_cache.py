"""The on-disk cache (``@scriptc.script(cache=True)``): hits in fresh processes, misses whenever what the
machine code depends on changes (a callee in another file, a global constant, scriptc's version), corrupt
entries, concurrent writers, and the ``scriptc cache`` command. Each run is a fresh Python process, as a
user's next run of a program would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime import disk_cache

ROOT = Path(__file__).resolve().parents[2]

KERNELS = """
import numpy as np
import scriptc
from helpers import shift

SCALE = 2.0

@scriptc.script(cache=True)
def add_loop(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x + 1.0
    return shift(x) * SCALE

@scriptc.script(cache=True)
def pick(x: np.ndarray, i: int) -> float:
    print("x[i] =", x[i], "of", len(x))
    return x[i] / 2.0
"""

HELPERS = """
import numpy as np
import scriptc

@scriptc.script
def shift(x: np.ndarray) -> np.ndarray:
    return x - 0.5
"""

RUN = """
import json, sys
import numpy as np
{before}
import kernels
from scriptc.backend.llvm.runtime import disk_cache
x = np.arange(5.0)
out = {{"add_loop": kernels.add_loop(x, 3).tolist(), "pick": kernels.pick(x, 3)}}
try:
    kernels.pick(x, 7)
except IndexError as e:
    out["error"] = str(e)
out["stats"] = disk_cache.stats
out["llvmlite"] = "llvmlite" in sys.modules
print(json.dumps(out))
"""


def run(where: Path, before: str = "", env_extra=None) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{where}{os.pathsep}{ROOT}")
    env.pop("SCRIPTC_CACHE_DIR", None)
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-c", RUN.format(before=before)],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    *printed, last = proc.stdout.strip().splitlines()
    result = json.loads(last)
    result["printed"] = printed
    return result


def rewrite(path: Path, text: str) -> None:
    """Edit a source file as a user would; drop its bytecode, which Python would reuse for an edit that keeps the
    file's size within the same second as the last write (it checks size and mtime)."""
    path.write_text(text)
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink()


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "helpers.py").write_text(HELPERS)
    return tmp_path


def expected(scale=2.0, offset=0.5):
    x = np.arange(5.0)
    return {
        "add_loop": ((x + 3.0 - offset) * scale).tolist(),
        "pick": x[3] / 2.0,
        "error": "index 7 is out of bounds for axis 0 with size 5",
    }


def check(result, **kw):
    for name, value in expected(**kw).items():
        assert result[name] == value, name
    assert result["printed"] == ["x[i] = 3.0 of 5"]


def test_second_process_hits_and_gives_the_same_results(project):
    first = run(project)
    check(first)
    assert first["stats"]["hits"] == 0 and first["stats"]["stores"] == 2
    assert len(list((project / "__pycache__").glob("*.scc"))) == 2
    second = run(project)
    check(second)  # results, the printed text and the IndexError's message all come from cached code
    assert second["stats"] == {"hits": 2, "misses": 0, "stores": 0, "rejected": 0, "untrusted": 0}


def test_a_hit_does_not_load_llvm(project):
    assert run(project)["llvmlite"]
    second = run(project)
    check(second)
    assert second["stats"]["hits"] == 2 and not second["llvmlite"]


def test_where_objload_declines_the_jit_links_the_entry(project):
    """Another machine (or a relocation objload does not handle): a hit still, linked by LLVM's JIT."""
    run(project)
    result = run(project, before="from scriptc.backend.llvm.runtime import objload; objload.SUPPORTED = False")
    check(result)
    assert result["stats"]["hits"] == 2 and result["llvmlite"]


def test_a_header_that_does_not_match_its_code_is_rejected(project):
    """The error messages an entry lists must hash to the very codes its machine code returns: an edited
    message is not believed (the entry is compiled again), never raised."""
    run(project)
    path = next((project / "__pycache__").glob("pick-*.scc"))
    data = path.read_bytes()
    header = disk_cache.read_header(data)
    obj = data[header.pop("_end") :]
    assert any("out of bounds" in json.dumps(e) for e in header["errors"])
    text = json.dumps(header).replace("out of bounds", "OUT OF BOUNDS").encode()
    path.write_bytes(disk_cache.MAGIC + len(text).to_bytes(8, "little") + text + obj)
    result = run(project)
    check(result)
    assert result["stats"]["rejected"] == 1 and result["stats"]["stores"] == 1
    assert run(project)["stats"]["hits"] == 2


PARALLEL = """
import numpy as np
import scriptc

@scriptc.script(cache=True)
def total(x: np.ndarray) -> float:
    s = 0.0
    for i in scriptc.prange(x.shape[0]):
        s += x[i] * 2.0
    return s + np.sum(x * x)
"""

RUN_PARALLEL = """
import json, sys
import numpy as np
import parallel_kernels
from scriptc.backend.llvm.runtime import disk_cache
x = np.arange(1000.0)
print(json.dumps({"total": parallel_kernels.total(x), "stats": disk_cache.stats,
                  "llvmlite": "llvmlite" in sys.modules}))
"""


def test_runtimes_come_from_the_cache_too(tmp_path):
    """The thread pool and the summation kernels are compiled once per process; a hit links the copies kept
    beside the entries (content-addressed), still without LLVM; a damaged one is not used, and is rewritten."""
    (tmp_path / "parallel_kernels.py").write_text(PARALLEL)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    env.pop("SCRIPTC_CACHE_DIR", None)

    def go():
        proc = subprocess.run(
            [sys.executable, "-c", RUN_PARALLEL], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    x = np.arange(1000.0)
    want = float(np.sum(x * 2.0)) + float(np.sum(x * x))
    assert go()["total"] == want
    kept = list((tmp_path / "__pycache__").glob("runtime-*.sco"))
    assert kept
    second = go()
    assert second["total"] == want and second["stats"]["hits"] == 1 and not second["llvmlite"]
    for path in kept:
        path.write_bytes(path.read_bytes()[:100])
    third = go()
    assert third["total"] == want and third["stats"]["rejected"] == 1
    assert go()["stats"]["hits"] == 1


def test_a_damaged_host_description_is_made_again(project):
    run(project)
    for path in (project / "__pycache__").glob("host-*.json"):
        path.write_text("{not json")
    result = run(project)
    check(result)
    assert result["stats"]["hits"] == 2 and result["llvmlite"]  # LLVM gave the description again
    assert not run(project)["llvmlite"]


def test_editing_a_callee_in_another_file_is_a_miss(project):
    run(project)
    rewrite(project / "helpers.py", HELPERS.replace("x - 0.5", "x - 0.25"))
    result = run(project)
    check(result, offset=0.25)
    assert result["stats"]["misses"] == 1 and result["stats"]["hits"] == 1  # pick does not call shift


def test_changing_a_global_constant_is_a_miss(project):
    run(project)
    rewrite(project / "kernels.py", KERNELS.replace("SCALE = 2.0", "SCALE = 3.0"))
    result = run(project)
    check(result, scale=3.0)
    assert result["stats"]["misses"] == 1


def test_another_scriptc_version_is_a_miss(project):
    run(project)
    result = run(project, before="import scriptc.version; scriptc.version.__version__ = '99.0'")
    check(result)
    assert result["stats"]["hits"] == 0 and result["stats"]["misses"] == 2


def test_options_are_part_of_the_key(project):
    run(project)
    rewrite(
        project / "kernels.py",
        KERNELS.replace(
            "@scriptc.script(cache=True)\ndef add_loop", "@scriptc.script(cache=True, nogil=True)\ndef add_loop"
        ),
    )
    result = run(project)
    check(result)
    assert result["stats"]["misses"] == 1 and result["stats"]["hits"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_entry_is_ignored_and_rewritten(project, damage):
    run(project)
    for entry in (project / "__pycache__").glob("*.scc"):
        data = entry.read_bytes()
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip":
            data = data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:]
        else:
            data = b"not a cache entry"
        entry.write_bytes(data)
    result = run(project)
    check(result)
    assert result["stats"]["hits"] == 0 and result["stats"]["stores"] == 2
    assert all(disk_cache.read_header(e.read_bytes()) for e in (project / "__pycache__").glob("*.scc"))
    assert run(project)["stats"]["hits"] == 2


def test_concurrent_processes_never_read_a_torn_entry(project):
    env = dict(os.environ, PYTHONPATH=f"{project}{os.pathsep}{ROOT}")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RUN.format(before="")],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["add_loop"] == expected()["add_loop"]
    assert not list((project / "__pycache__").glob(".tmp-*"))
    assert run(project)["stats"]["hits"] == 2


def test_cache_dir_from_the_environment(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("scriptc-cache")
    check(run(project, env_extra={"SCRIPTC_CACHE_DIR": str(elsewhere)}))
    assert len(list(elsewhere.glob("*.scc"))) == 2
    assert not (project / "__pycache__").exists() or not list((project / "__pycache__").glob("*.scc"))
    assert run(project, env_extra={"SCRIPTC_CACHE_DIR": str(elsewhere)})["stats"]["hits"] == 2


def test_in_process_results_match_uncached(tmp_path):
    def body(x: np.ndarray, k: int) -> np.ndarray:
        s = np.zeros_like(x)
        for i in range(k):
            s = s + np.sin(x * i)
        return s

    cached = scriptc.script(cache=tmp_path)(body)
    plain = scriptc.script(body)
    x = np.linspace(0, 1, 7)
    np.testing.assert_array_equal(cached(x, 4), plain(x, 4))
    assert len(list(tmp_path.glob("*.scc"))) == 1
    assert "define" in cached.inspect_llvm(x, 4)


TABLE = np.array([1.0, 2.0, 3.0])


def test_code_embedding_an_array_constant_is_not_stored(tmp_path):
    @scriptc.script(cache=tmp_path)
    def lookup(i: int) -> float:
        return TABLE[i]

    assert lookup(2) == 3.0
    assert not list(tmp_path.glob("*.scc"))


def test_cli_lists_and_clears(project):
    run(project)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SCRIPTC_CACHE_DIR", None)
    listed = subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--list"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "add_loop" in listed and "pick" in listed and "2 entries" in listed
    cleared = subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--clear"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "removed 2 entries" in cleared
    assert not list((project / "__pycache__").glob("*.scc"))


def test_cli_clears_only_the_caches_files(project):
    """Files outside ``__pycache__`` (and outside the directories named) that merely share a cache file's
    suffix or name are the user's: ``--list`` and ``--clear`` never touch them."""
    run(project)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SCRIPTC_CACHE_DIR", None)
    users = [
        project / "scheme" / "lib.scm",
        project / "scheme" / "data.scc",
        project / "config" / "host-prod.json",
        project / "old" / "runtime-1.sco",
    ]
    for path in users:
        path.parent.mkdir(exist_ok=True)
        path.write_text("(the user's)")
    listed = subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--list"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "2 entries" in listed and "scheme" not in listed
    subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--clear"], cwd=project, env=env, check=True, capture_output=True
    )
    assert not list((project / "__pycache__").glob("*.sc[cm]")) and all(p.read_text() == "(the user's)" for p in users)
    # a directory named on the command line: its own files too are the cache's only when scriptc wrote them
    named = [project / "scheme" / "lib-0123456789abcdef0123456789abcdef.scm", project / "scheme" / "vssver.scc"]
    for path in named:
        path.write_text("(the user's)")
    subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--clear", str(project / "scheme")],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
    )
    assert all(p.read_text() == "(the user's)" for p in users + named)
    missing = subprocess.run(
        [sys.executable, "-m", "scriptc", "cache", "--list", str(project / "nowhere")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such directory" in missing.stderr


def test_entry_header_is_plain_json(project):
    run(project)
    entry = next((project / "__pycache__").glob("add_loop-*.scc"))
    header = disk_cache.read_header(entry.read_bytes())
    assert header["function"] == "add_loop" and len(header["key"]) == 64
    raw = entry.read_bytes()[len(disk_cache.MAGIC) + 8 : header["_end"]]
    assert json.loads(raw)["sha256"] == header["sha256"]


def test_code_drawing_normal_numbers_is_stored(tmp_path):
    # scriptc.random.normal's polynomial coefficients are constants of the code, not arrays referred to by
    # address: a function drawing from it is cached (and exported) like any other
    @scriptc.script(cache=tmp_path)
    def noisy(key: np.ndarray, x: np.ndarray) -> np.ndarray:
        return x + scriptc.random.normal(key, (x.shape[0],)) + scriptc.random.normal(key, (2,), dtype=np.float32)[0]

    key, x = scriptc.random.key(5), np.arange(4.0)
    np.testing.assert_array_equal(noisy(key, x), noisy.interpret(key, x))
    scriptc.wait_optimized()
    assert len(list(tmp_path.glob("noisy-*.scc"))) == 1


# -- trust: nothing another user could have written is run ----------------------------------------------------


def body_for_trust(x: np.ndarray, k: int) -> np.ndarray:
    return x * k + 1.0


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_a_directory_others_can_write_is_not_used(tmp_path, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    stores = disk_cache.stats["stores"]
    with pytest.warns(
        disk_cache.CacheWarning,
        match=rf"not using the cache directory .*shared: it is writable by "
        rf"other users \(mode {mode:04o}\); chmod go-w it",
    ):
        f = scriptc.script(cache=shared)(body_for_trust)
        np.testing.assert_array_equal(f(np.arange(3.0), 2), np.arange(3.0) * 2 + 1.0)
    assert disk_cache.stats["stores"] == stores and list(shared.iterdir()) == []


def test_an_entry_others_can_write_or_another_user_owns_is_not_run(project):
    check(run(project))  # stores the entries
    entries = list((project / "__pycache__").glob("*.scc"))
    assert entries
    for entry in entries:
        entry.chmod(0o666)
    result = run(project)
    check(result)
    assert result["stats"]["hits"] == 0 and result["stats"]["untrusted"] >= len(entries)
    for entry in entries:
        entry.chmod(0o600)
    assert run(project)["stats"]["hits"] == len(entries)  # ours again: used
    if os.getuid() == 0:  # root's files are trusted (as ssh trusts them): give them to another user
        for entry in entries:
            os.chown(entry, 12345, 12345)
        before = ""
    else:  # the child takes itself for another user
        before = "import os; os.getuid = lambda: 12345"
    result = run(project, before=before)
    check(result)
    assert result["stats"]["hits"] == 0 and result["stats"]["untrusted"] >= len(entries)


def test_the_warning_is_one_line_naming_the_file_and_the_fix(tmp_path):
    path = tmp_path / "entry.scc"
    path.write_bytes(b"x")
    path.chmod(0o646)
    with pytest.warns(disk_cache.CacheWarning) as record:
        assert disk_cache.read_trusted(path) is None
        assert disk_cache.read_trusted(path) is None  # once per path
    (warning,) = record
    assert str(warning.message) == (
        f"scriptc: not using the cache file {path}: it is writable by other users (mode "
        f"0646); chmod go-w it, or set SCRIPTC_CACHE_DIR to a directory of your own"
    )
