"""``scriptc export`` and ``scriptc.load``: a library made from a corpus of functions, called from C (compiled
with the system C compiler against the generated header) and from Python, checked against CPython running the
same functions: results, returned arrays, error codes and messages, printed text; no leak under LeakSanitizer;
and loading refuses damaged or foreign libraries."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import scriptc
from scriptc.backend.export.load import LoadError

ROOT = Path(__file__).resolve().parents[2]
CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(
    CC is None or not sys.platform.startswith("linux"), reason="export links with the system C compiler (Linux)"
)

KERNELS = """
import numpy as np
import scriptc

@scriptc.script
def saxpy(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    return a * x + y

@scriptc.script
def norm(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s ** 0.5

@scriptc.script
def pick(x: np.ndarray, i: int) -> float:
    print("pick", i, x[i], i > 2, None, (i, 2.5, "it's"))
    return x[i]

@scriptc.script
def stats(x: np.ndarray) -> tuple[float, np.ndarray, int]:
    return float(np.mean(x)), x[1:], x.shape[0]

@scriptc.script
def floordiv(a: int, b: int) -> int:
    return a // b

@scriptc.script
def scale_rows(m: np.ndarray, k: float) -> np.ndarray:
    out = np.empty_like(m)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = m[i, j] * k + i
    return out

@scriptc.script
def reprs(x: np.ndarray) -> int:
    for i in range(x.shape[0]):
        print(x[i])
    return x.shape[0]

@scriptc.script
def count_positive(x: np.ndarray, strict: bool) -> int:
    n = 0
    for v in x:
        if v > 0 or (not strict and v == 0):
            n += 1
    return n

@scriptc.script
def uses_round(x: float) -> float:
    return round(x, 2)

TABLE = np.array([1.0, 2.0, 3.0])

@scriptc.script
def uses_table(i: int) -> float:
    return TABLE[i]

from typing import NamedTuple

class Pair(NamedTuple):
    a: float
    b: float

@scriptc.script
def gives_pair(a: float) -> Pair:
    return Pair(a, 2.0 * a)


@scriptc.script
def bump(x: np.ndarray) -> None:
    x += 1


@scriptc.script
def shifted(x: np.ndarray, by: float = 1.5, twice: bool = False) -> np.ndarray:
    return x + by * (2.0 if twice else 1.0)


@scriptc.script
def raising(k: int) -> int:
    if k == 0:
        raise ValueError
    if k == 1:
        raise KeyError(k)
    if k == 2:
        raise ValueError("a", "b")
    if k == 3:
        raise KeyError(f"{k}")
    if k == 4:
        assert k < 0, f"k was {k}"
    if k == 5:
        raise KeyError("")
    return k
"""

TYPES = [
    ("saxpy", ["float64[*]", "float64[*]", "float"]),
    ("saxpy", ["float32[*]", "float32[*]", "float"]),
    ("norm", ["float64[*]"]),
    ("pick", ["float64[*]", "int"]),
    ("stats", ["float64[*]"]),
    ("floordiv", ["int", "int"]),
    ("scale_rows", ["float64[*,*]", "float"]),
    ("reprs", ["float64[*]"]),
    ("count_positive", ["int64[*]", "bool"]),
    ("bump", ["int8[*,*]"]),
    ("raising", ["int"]),
    ("shifted", ["float64[*]", "float", "bool"]),
]

MAIN_C = r"""
#include <stdio.h>
#include <string.h>
#include "corpus.h"

static scriptc_array vec(void *d, int64_t n, int32_t dtype, int64_t itemsize) {
    scriptc_array a; memset(&a, 0, sizeof a);
    a.data = d; a.shape[0] = n; a.strides[0] = itemsize; a.ndim = 1; a.dtype = dtype; return a;
}
#define CHECK(call) do { int rc = (call); if (rc) printf("error %d %s\n", rc != 0, corpus_last_error()); } while (0)

int main(void) {
    double xs[5] = {1.5, -2.0, 3.25, 0.0, 4.0}, ys[5] = {0.5, 0.25, 0.125, 1.0, 2.0};
    float xf[3] = {1.5f, 2.5f, -1.0f}, yf[3] = {1.0f, 1.0f, 1.0f};
    scriptc_array x = vec(xs, 5, SCRIPTC_FLOAT64, 8), y = vec(ys, 5, SCRIPTC_FLOAT64, 8), out;
    CHECK(corpus_saxpy(&x, &y, 2.0, &out));
    printf("saxpy");
    for (int i = 0; i < 5; i++) printf(" %.17g", ((double *)out.data)[i]);
    printf(" owner=%d\n", out.owner != NULL);
    corpus_release(&out);
    scriptc_array a = vec(xf, 3, SCRIPTC_FLOAT32, 4), b = vec(yf, 3, SCRIPTC_FLOAT32, 4);
    CHECK(corpus_saxpy_1(&a, &b, 0.5, &out));
    printf("saxpy32");
    for (int i = 0; i < 3; i++) printf(" %.9g", ((float *)out.data)[i]);
    printf(" dtype=%d\n", out.dtype);
    corpus_release(&out);
    double r;
    CHECK(corpus_norm(&x, &r)); printf("norm %.17g\n", r);
    fflush(stdout);
    CHECK(corpus_pick(&x, 3, &r)); printf("pick %.17g\n", r);
    CHECK(corpus_pick(&x, 7, &r));
    scriptc_array tail; int64_t n;
    CHECK(corpus_stats(&x, &r, &tail, &n));
    printf("stats %.17g %lld %lld %.17g owner=%d view=%d\n", r, (long long)n, (long long)tail.shape[0],
           ((double *)tail.data)[0], tail.owner != NULL, tail.data == (void *)(xs + 1));
    corpus_release(&tail);
    int64_t q;
    CHECK(corpus_floordiv(-7, 2, &q)); printf("floordiv %lld\n", (long long)q);
    CHECK(corpus_floordiv(7, 0, &q));
    double m[6] = {1, 2, 3, 4, 5, 6};
    scriptc_array mat; memset(&mat, 0, sizeof mat);
    mat.data = m; mat.ndim = 2; mat.dtype = SCRIPTC_FLOAT64;
    mat.shape[0] = 3; mat.shape[1] = 2; mat.strides[0] = 8; mat.strides[1] = 24;   /* a transposed view */
    CHECK(corpus_scale_rows(&mat, 0.5, &out));
    printf("scale_rows %lld %lld", (long long)out.shape[0], (long long)out.shape[1]);
    for (int i = 0; i < 3; i++) for (int j = 0; j < 2; j++)
        printf(" %.17g", *(double *)((char *)out.data + i * out.strides[0] + j * out.strides[1]));
    printf("\n");
    corpus_release(&out);
    int64_t ints[4] = {3, 0, -1, 5};
    scriptc_array iv = vec(ints, 4, SCRIPTC_INT64, 8);
    CHECK(corpus_count_positive(&iv, true, &n)); printf("count %lld\n", (long long)n);
    CHECK(corpus_count_positive(&iv, false, &n)); printf("count %lld\n", (long long)n);
    x.dtype = SCRIPTC_INT32;
    CHECK(corpus_norm(&x, &r));
    x.dtype = SCRIPTC_FLOAT64;
    CHECK(corpus_saxpy(&x, &y, 2.0, NULL));     /* no out pointer: an error, before anything runs */
    CHECK(corpus_stats(&x, &r, NULL, &n));
    fflush(stdout);
    return 0;
}
"""


def expected_main_output(mod) -> str:
    """What MAIN_C prints, computed by CPython running the same functions."""
    xs = np.array([1.5, -2.0, 3.25, 0.0, 4.0])
    ys = np.array([0.5, 0.25, 0.125, 1.0, 2.0])
    lines, buf = [], io.StringIO()
    lines.append("saxpy " + " ".join(f"{v:.17g}" for v in mod.saxpy.py_func(xs, ys, 2.0)) + " owner=1")
    f32 = mod.saxpy.py_func(np.array([1.5, 2.5, -1.0], np.float32), np.ones(3, np.float32), 0.5)
    lines.append("saxpy32 " + " ".join(f"{v:.9g}" for v in f32) + " dtype=1")
    lines.append(f"norm {mod.norm.py_func(xs):.17g}")
    with contextlib.redirect_stdout(buf):
        value = mod.pick.py_func(xs, 3)
    lines += buf.getvalue().splitlines() + [f"pick {value:.17g}"]
    lines.append(f"error 1 IndexError: {_message(mod.pick.py_func, xs, 7)}")
    mean, tail, n = mod.stats.py_func(xs)
    lines.append(f"stats {mean:.17g} {n} {len(tail)} {tail[0]:.17g} owner=0 view=1")
    lines.append(f"floordiv {mod.floordiv.py_func(-7, 2)}")
    lines.append(f"error 1 ZeroDivisionError: {_message(mod.floordiv.py_func, 7, 0)}")
    m = np.arange(1.0, 7.0).reshape(2, 3).T
    lines.append("scale_rows 3 2 " + " ".join(f"{v:.17g}" for v in mod.scale_rows.py_func(m, 0.5).ravel()))
    ints = np.array([3, 0, -1, 5])
    lines += [f"count {mod.count_positive.py_func(ints, True)}", f"count {mod.count_positive.py_func(ints, False)}"]
    lines.append(
        "error 1 TypeError: norm(): argument 'x': expected a float64 array of rank 1, got a int32 array of rank 1"
    )
    lines += [
        "error 1 TypeError: saxpy(): out pointer 'out' is NULL",
        "error 1 TypeError: stats(): out pointer 'out1' is NULL",
    ]
    return "\n".join(lines) + "\n"


def _message(fn, *args) -> str:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        return str(e)
    raise AssertionError("expected an exception")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    where = tmp_path_factory.mktemp("export")
    return where, export_module(where, "corpus_kernels", KERNELS, TYPES, "build/libcorpus.so")


def export_module(where: Path, name: str, source: str, signatures, output: str):
    """Write ``source`` as ``<where>/<name>.py``, export its (function, types) ``signatures`` (a function's
    signatures one after another) to ``output``, and return the module, imported (the CPython oracle)."""
    (where / f"{name}.py").write_text(source)
    spec = importlib.util.spec_from_file_location(name, where / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv, last = [], None
    for fname, types in signatures:  # F --types ... --types ...
        if fname != last:
            argv.append(f"{name}.py:{fname}")
        argv += ["--types", *types]
        last = fname
    result = export(where, argv + ["-o", output])
    assert result.returncode == 0, result.stderr
    return mod


def export(where: Path, argv: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "scriptc", "export", *argv],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def require_address_sanitizer(where: Path) -> None:
    """Skip the test when the C compiler cannot build with -fsanitize=address."""
    probe = subprocess.run(
        [CC, "-fsanitize=address", "-x", "c", "-", "-o", str(where / "probe")],
        input="int main(void){return 0;}",
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip("the C compiler has no AddressSanitizer")


def compile_c(where: Path, source: str, name: str, *flags: str, link: list[str] | None = None) -> Path:
    (where / f"{name}.c").write_text(source)
    exe = where / name
    link = link if link is not None else ["-Lbuild", "-lcorpus", f"-Wl,-rpath,{where / 'build'}"]
    proc = subprocess.run(
        [CC, *flags, "-Ibuild", "-o", str(exe), f"{name}.c", *link], cwd=where, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return exe


def test_the_header_declares_the_c_abi(built):
    where, _ = built
    h = (where / "build" / "corpus.h").read_text()
    assert "#define SCRIPTC_MAX_DIMS 8" in h and "void *owner;" in h
    assert "int corpus_saxpy(const scriptc_array *x, const scriptc_array *y, double a, scriptc_array *out);" in h
    assert "int corpus_saxpy_1(const scriptc_array *x, const scriptc_array *y, double a, scriptc_array *out);" in h
    assert "int corpus_stats(const scriptc_array *x, double *out0, scriptc_array *out1, int64_t *out2);" in h
    assert "int corpus_count_positive(const scriptc_array *x, bool strict, int64_t *out);" in h
    assert "const char *corpus_last_error(void);" in h and "void corpus_release(scriptc_array *a);" in h


def test_the_library_needs_only_the_c_and_math_libraries(built):
    where, _ = built
    ldd = subprocess.run(["ldd", str(where / "build" / "libcorpus.so")], capture_output=True, text=True).stdout
    libs = [line.split()[0] for line in ldd.splitlines() if line.strip()]
    assert libs and all(
        lib.split(".so")[0].rsplit("/", 1)[-1] in ("linux-vdso", "libc", "libm", "libmvec", "ld-linux-x86-64")
        for lib in libs
    ), libs


def test_a_c_program_gets_cpythons_results_errors_and_printed_text(built):
    where, mod = built
    exe = compile_c(where, MAIN_C, "main", "-O1")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out == expected_main_output(mod)


def test_no_leak_under_leak_sanitizer(built):
    where, _ = built
    require_address_sanitizer(where)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    exe = compile_c(where, MAIN_C, "main_asan", "-fsanitize=address", "-g")
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and "leak" not in run.stderr.lower(), run.stderr
    # the check can fail: forgetting to release a returned array is reported
    leaky = MAIN_C.replace("    corpus_release(&out);\n    scriptc_array a", "    scriptc_array a", 1)
    exe = compile_c(where, leaky, "main_leak", "-fsanitize=address", "-g")
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert run.returncode != 0 and "Direct leak" in run.stderr


REPR_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "corpus.h"
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    static double xs[4096];
    size_t n = fread(xs, 8, 4096, f);
    fclose(f);
    scriptc_array x; memset(&x, 0, sizeof x);
    x.data = xs; x.shape[0] = (int64_t)n; x.strides[0] = 8; x.ndim = 1; x.dtype = SCRIPTC_FLOAT64;
    int64_t count;
    return corpus_reprs(&x, &count);
}
"""


def test_printed_floats_are_cpythons_repr(built):
    where, _ = built
    rng = np.random.default_rng(7)
    special = [
        0.1,
        1e16,
        1e-5,
        1e-4,
        123456789.123,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        5e-324,
        1.7976931348623157e308,
        100.0,
        1e22,
        9007199254740993.0,
        0.3,
        2.0 / 3.0,
        1234567890123456.7,
        12345678901234567.0,
    ]
    values = np.concatenate(
        [
            special,
            rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500),
            rng.integers(0, 2**63, 500, dtype=np.uint64).view(np.float64),
        ]
    )
    values = values[np.isfinite(values) | np.isnan(values)]
    values.tofile(where / "values.bin")
    exe = compile_c(where, REPR_C, "reprs")
    out = subprocess.run([str(exe), str(where / "values.bin")], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [repr(float(v)) for v in values]


def test_emit_obj_links_statically(built):
    where, _ = built
    result = export(
        where, ["corpus_kernels.py:floordiv", "--types", "int", "int", "-o", "static/libcorpus.o", "--emit=obj"]
    )
    assert result.returncode == 0, result.stderr
    source = (
        '#include <stdio.h>\n#include "corpus.h"\nint main(void){int64_t q; int rc = corpus_floordiv(-9, 4, &q);'
        ' printf("%d %lld\\n", rc, (long long)q); return 0;}\n'
    )
    (where / "static_main.c").write_text(source)
    exe = where / "static_main"
    subprocess.run(
        [CC, "-Istatic", "-o", str(exe), "static_main.c", "static/libcorpus.o", "-lm", "-pthread"],
        cwd=where,
        check=True,
    )
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout == f"0 {-9 // 4}\n"


def test_the_objects_of_two_libraries_link_into_one_program(tmp_path):
    # each object defines the runtime (scriptc_init, the pool...): only the library's own C names stay global
    (tmp_path / "k.py").write_text(
        "import scriptc\n\n\n@scriptc.script\ndef f(x: float) -> float:\n"
        "    return x + 1.0\n\n\n@scriptc.script\ndef g(x: float) -> float:\n"
        "    return x * 3.0\n"
    )
    for lib, fn in (("one", "f"), ("two", "g")):
        result = export(tmp_path, [f"k.py:{fn}", "--types", "float", "-o", f"static/lib{lib}.o", "--emit=obj"])
        assert result.returncode == 0, result.stderr
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "one.h"\n#include "two.h"\nint main(void){double a, b;'
        ' int rc = one_f(2.0, &a) | two_g(2.0, &b); printf("%d %g %g\\n", rc, a, b); return 0;}\n'
    )
    subprocess.run(
        [CC, "-Istatic", "-o", "main", "main.c", "static/libone.o", "static/libtwo.o", "-lm", "-pthread"],
        cwd=tmp_path,
        check=True,
    )
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout == "0 3 6\n"


def test_an_object_without_objcopy_is_an_export_error(tmp_path, monkeypatch):
    # without objcopy the object would keep the runtime's names global: a second library's object would clash
    from scriptc.backend import export as exporting
    from scriptc.ir.types import FLOAT

    (tmp_path / "k1.py").write_text(
        "import scriptc\n\n\n@scriptc.script\ndef f(x: float) -> float:\n    return x + 1.0\n"
    )
    spec = importlib.util.spec_from_file_location("k1", tmp_path / "k1.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    which = shutil.which
    monkeypatch.setattr(exporting.shutil, "which", lambda name: None if "objcopy" in name else which(name))
    with pytest.raises(exporting.ExportError, match="--emit=obj needs objcopy"):
        exporting.export_library([(mod.f, [(FLOAT,)])], tmp_path / "libk1.o", emit="obj")


def test_unsupported_code_is_a_clear_export_error(built):
    where, _ = built
    result = export(where, ["corpus_kernels.py:uses_round", "--types", "float", "-o", "bad/libbad.so"])
    assert result.returncode == 1 and "round(x, ndigits)" in result.stderr
    result = export(where, ["corpus_kernels.py:uses_table", "--types", "int", "-o", "bad/libbad.so"])
    assert result.returncode == 1 and "array constant" in result.stderr
    result = export(where, ["corpus_kernels.py:gives_pair", "--types", "float", "-o", "bad/libbad.so"])
    assert result.returncode == 1 and "is a Pair (a NamedTuple)" in result.stderr and "Traceback" not in result.stderr


def test_names_that_would_clash_in_c_are_export_errors(tmp_path):
    """Two functions named alike (from two files: the first ran under both names), a function whose C name
    is the library's own or the runtime's (a C compiler's error) or another signature's (an internal error)."""
    (tmp_path / "one.py").write_text(
        "import scriptc\n\n\n@scriptc.script\ndef f(x: float) -> float:\n"
        "    return x + 1.0\n\n\n@scriptc.script\ndef f_1(x: float) -> float:\n"
        "    return x\n\n\n@scriptc.script\ndef release(x: float) -> float:\n"
        "    return x\n\n\n@scriptc.script\ndef init(x: float) -> float:\n"
        "    return x\n"
    )
    (tmp_path / "two.py").write_text(
        "import scriptc\n\n\n@scriptc.script\ndef f(x: float) -> float:\n    return x * 2.0\n"
    )
    for argv, message in (
        (
            ["one.py:f", "--types", "float", "two.py:f", "--types", "float"],
            "two functions are named f (one.py:4 and two.py:4)",
        ),
        (["one.py:release", "--types", "float"], "would be both the library's own lib_release and release"),
        (
            ["one.py:f", "--types", "float", "--types", "int", "one.py:f_1", "--types", "float"],
            "lib_f_1 would be both f(int) and f_1(float)",
        ),
        (["one.py:f", "--types", "float", "--types", "float"], "f is exported twice for (float)"),
        (
            ["one.py:init", "--types", "float", "-o", "build/libscriptc.so"],
            "the C function scriptc_init (init(float)) would redefine a name of scriptc's runtime",
        ),
    ):
        result = export(tmp_path, argv + ["-o", "build/lib.so"] * ("-o" not in argv))
        assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


# -- scriptc.load ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lib(built):
    where, _ = built
    return scriptc.load(where / "build" / "libcorpus.so")


def test_loaded_functions_match_cpython(built, lib):
    _, mod = built
    xs = np.array([1.5, -2.0, 3.25, 0.0, 4.0])
    np.testing.assert_array_equal(lib.saxpy(xs, xs[::-1].copy(), 3.0), mod.saxpy.py_func(xs, xs[::-1], 3.0))
    x32 = xs.astype(np.float32)
    r32 = lib.saxpy(x32, x32, 0.5)
    assert r32.dtype == np.float32 and np.array_equal(r32, mod.saxpy.py_func(x32, x32, 0.5))
    assert lib.norm(xs) == mod.norm.py_func(xs)
    assert lib.floordiv(-7, 2) == -4 and lib.count_positive(np.array([1, 0, 2]), True) == 2
    mean, tail, n = lib.stats(xs)
    assert (mean, n) == (float(np.mean(xs)), 5) and np.shares_memory(tail, xs) and np.array_equal(tail, xs[1:])
    m = np.arange(12.0).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(lib.scale_rows(m, 0.25), mod.scale_rows.py_func(m, 0.25))


def test_loaded_errors_are_the_same_exceptions(built, lib):
    _, mod = built
    for fn, py, args in (
        (lib.pick, mod.pick.py_func, (np.arange(3.0), 5)),
        (lib.floordiv, mod.floordiv.py_func, (1, 0)),
    ):
        with pytest.raises(Exception) as ours:
            with contextlib.redirect_stdout(io.StringIO()):
                fn(*args)
        with pytest.raises(Exception) as theirs:
            py(*args)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_loaded_functions_refuse_to_write_read_only_arrays(built, lib):
    """As the scripted function: NumPy's error for a read-only array the code writes (it wrote into immutable
    bytes, and a read-only mmap crashed the process), reading one is fine."""
    _, mod = built
    data = bytes(4)
    frozen = np.frombuffer(data, dtype=np.int8).reshape(2, 2)
    for fn in (lib.bump, mod.bump):
        with pytest.raises(ValueError, match="^output array is read-only$"):
            fn(frozen)
    assert data == bytes(4)
    ones = np.ones((2, 2), np.int8)
    lib.bump(ones)
    assert (ones == 2).all()
    xs = np.arange(4.0)
    xs.flags.writeable = False
    assert lib.norm(xs) == mod.norm.py_func(xs)


def test_a_library_exported_again_to_the_same_path_loads_its_new_code(tmp_path):
    """The dynamic loader reuses what it loaded from a path: the second load ran the old code (2.0) under the
    new manifest (a notebook's edit, export, load)."""
    source = "import scriptc\n\n\n@scriptc.script\ndef g(x: float) -> float:\n    return x + 1.0\n"
    export_module(tmp_path, "edited", source, [("g", ["float"])], "build/libedited.so")
    first = scriptc.load(tmp_path / "build" / "libedited.so")
    assert first.g(1.0) == 2.0
    export_module(tmp_path, "edited", source.replace("x + 1.0", "x * 100.0"), [("g", ["float"])], "build/libedited.so")
    second = scriptc.load(tmp_path / "build" / "libedited.so")
    assert second.g(1.0) == 100.0 and "aten::mul" in second.g.graph
    assert first.g(1.0) == 2.0  # the first library stays loaded, with its own code


def test_loaded_functions_pickle_by_reference_to_their_library(built, lib):
    """As scripted functions pickle by module and name: a library by its path, a function by its library's
    path and its name, loaded once per process where unpickled (here, and in a spawned pool's workers)."""
    data = pickle.dumps(lib.saxpy)
    assert len(data) < 300 and b"libcorpus.so" in data  # a reference, not the code
    again = pickle.loads(data)
    assert again is pickle.loads(data) and again.signatures == lib.saxpy.signatures
    assert pickle.loads(pickle.dumps(lib)).saxpy is again
    xs = np.array([1.5, -2.0, 3.25])
    np.testing.assert_array_equal(again(xs, xs, 3.0), lib.saxpy(xs, xs, 3.0))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.starmap(lib.saxpy, [(xs * k, xs, 2.0) for k in range(3)])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, lib.saxpy(xs * k, xs, 2.0))


def test_an_unpickled_function_the_library_no_longer_exports_is_an_unpickling_error(tmp_path):
    source = "import scriptc\n\n\n@scriptc.script\ndef g(x: float) -> float:\n    return x + 1.0\n"
    export_module(tmp_path, "renamed", source, [("g", ["float"])], "build/librenamed.so")
    data = pickle.dumps(scriptc.load(tmp_path / "build" / "librenamed.so").g)
    export_module(tmp_path, "renamed", source.replace("def g", "def h"), [("h", ["float"])], "build/librenamed.so")
    with pytest.raises(pickle.UnpicklingError, match="exports no function 'g'"):
        pickle.loads(data)


def test_loaded_functions_take_keyword_arguments_and_raise_cpythons_errors(built, lib):
    """Keywords, arity errors and an int beyond 64 bits: what the scripted function accepts and raises (a
    loaded function refused keywords, and called 2 ** 70 a signature mismatch: 'exported for (float64[*], int),
    not (float64[*], int)')."""
    _, mod = built
    xs = np.array([1.5, -2.0, 3.25])
    assert lib.saxpy(xs, a=2.0, y=xs) == pytest.approx(mod.saxpy.py_func(xs, xs, 2.0)) and lib.pick(i=1, x=xs) == -2.0
    for args, kwargs in (
        ((xs,), {"i": 1, "j": 2}),
        ((xs, 1), {"i": 1}),
        ((xs,), {}),
        ((xs, 1, 2), {}),
        ((xs, 2**70), {}),
    ):
        with pytest.raises((TypeError, OverflowError)) as ours:
            lib.pick(*args, **kwargs)
        with pytest.raises((TypeError, OverflowError)) as theirs:
            mod.pick(*args, **kwargs)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_loaded_functions_take_their_parameters_defaults(built, lib):
    """The Python function's defaults travel in the manifest (a loaded function said 'missing 2 required
    positional arguments' where the scripted function used them)."""
    _, mod = built
    x = np.arange(3.0)
    for args, kwargs in (((x,), {}), ((x, 2.0), {}), ((x,), {"twice": True}), ((x, 0.5, True), {})):
        np.testing.assert_array_equal(lib.shifted(*args, **kwargs), mod.shifted.py_func(*args, **kwargs))
    with pytest.raises(TypeError, match=r"^shifted\(\) takes from 1 to 3 positional arguments but 4 were given$"):
        lib.shifted(x, 1.0, True, 4)


def test_loaded_exceptions_have_the_scripted_functions_arguments(built, lib):
    """Not rebuilt from the message's text: KeyError('3') came back as KeyError("'3'"), KeyError(1) as
    KeyError('1'), ValueError('a', 'b') with one argument, a bare ValueError as ValueError('')."""
    _, mod = built
    for k in range(6):
        raised = []
        for fn in (mod.raising.py_func, mod.raising, lib.raising):
            with pytest.raises(Exception) as info:
                fn(k)
            raised.append((type(info.value), info.value.args))
        assert raised[0] == raised[1] == raised[2], (k, raised)


def test_a_signature_that_was_not_exported_is_a_type_error(lib):
    assert lib.saxpy.signatures == ["float64[*], float64[*], float", "float32[*], float32[*], float"]
    with pytest.raises(
        TypeError,
        match=r"saxpy\(\) was exported for \(float64\[\*\], float64\[\*\], float\), "
        r"\(float32\[\*\], float32\[\*\], float\), not \(int64\[\*\]",
    ):
        lib.saxpy(np.arange(3), np.arange(3), 1.0)


def test_loaded_functions_refuse_the_arrays_scripted_ones_refuse(built, lib):
    # a mask scripted code would ignore, a matrix's product, a byte order or alignment it cannot read: the same
    # TypeError as the scripted function, not a silent drop or "exported for (float64[*]), not (float64[*])"
    _, mod = built
    for bad in (
        np.ma.array([1.0, 2.0], mask=[False, True]),
        np.array([[1.0, 2.0]]).view(np.matrix),
        np.arange(3.0).astype(">f8"),
    ):
        with pytest.raises(TypeError) as ours:
            lib.norm(bad)
        with pytest.raises(TypeError) as scripted:
            mod.norm(bad)
        assert str(ours.value) == str(scripted.value), bad


def test_loaded_functions_take_unaligned_arrays_as_scripted_ones_do(built, lib):
    _, mod = built
    unaligned = np.frombuffer(bytearray(41), dtype=np.float64, count=5, offset=1)
    unaligned[:] = [3.0, -1.0, 0.5, 2.0, 4.0]
    assert not unaligned.flags.aligned
    assert lib.norm(unaligned) == mod.norm(unaligned) == mod.norm(np.ascontiguousarray(unaligned))


def test_loaded_graph_is_the_ir_it_was_made_from(built, lib):
    _, mod = built
    from scriptc.signatures import parse_signature

    assert "aten::pow" in str(lib.norm.graph)
    assert str(lib.norm.graph) == str(mod.norm.graph_for_types(parse_signature("float64[*]")))


def test_loaded_calls_go_through_the_library_s_cpython_entries(built, lib):
    """Calls whose arguments are exactly an exported signature's kinds run the entry compiled into the library
    (a builtin function: no Python in between); everything else takes the dispatch, with the same results."""
    _, mod = built
    entry = lib.norm._entry
    assert type(lib.norm).__call__ is entry and type(entry).__name__ == "builtin_function_or_method"
    xs = np.array([1.5, -2.0, 3.25, 0.0, 4.0])
    assert lib.norm(xs) == mod.norm.py_func(xs)
    assert lib.saxpy(xs, xs, 2).tolist() == lib.saxpy(xs, xs, 2.0).tolist()  # an int: the fallback converts
    assert lib.saxpy(xs.astype(np.float32), xs.astype(np.float32), 0.5).dtype == np.float32  # the second entry
    assert lib.count_positive(np.array([1, 0, 2]), np.bool_(False)) == 3
    assert lib.norm(x=xs) == mod.norm.py_func(xs)  # keywords: the dispatch binds them
    tail = lib.stats(xs)[1]
    assert np.shares_memory(tail, xs)  # a view comes back through the entry's rebuild


def test_the_library_does_not_need_python(built):
    """The CPython entries read the C API from a table scriptc.load fills: no Python symbol to resolve."""
    where, _ = built
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    undefined = subprocess.run(
        [nm, "-D", "--undefined-only", str(where / "build" / "libcorpus.so")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not [line for line in undefined.splitlines() if line.split()[-1].startswith(("Py", "_Py"))]
    defined = subprocess.run(
        [nm, "-D", "--defined-only", str(where / "build" / "libcorpus.so")], capture_output=True, text=True, check=True
    ).stdout
    assert "corpus_norm__python" in defined and "corpus_python_table" in defined


def test_load_refuses_foreign_and_damaged_libraries(built, tmp_path):
    where, _ = built
    libm = next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6") if os.path.exists(p))
    with pytest.raises(LoadError, match="not made by scriptc export"):
        scriptc.load(libm)
    (tmp_path / "junk.so").write_bytes(b"\x7fELF garbage")
    with pytest.raises(LoadError):
        scriptc.load(tmp_path / "junk.so")
    data = (where / "build" / "libcorpus.so").read_bytes()
    from scriptc.backend.export import FORMAT

    assert f'"format": {FORMAT}'.encode() in data
    (tmp_path / "newer.so").write_bytes(data.replace(f'"format": {FORMAT}'.encode(), b'"format": 9'))
    with pytest.raises(LoadError, match="format 9"):
        scriptc.load(tmp_path / "newer.so")
    from scriptc.backend.export import SECTION
    from scriptc.backend.export.integrity import reseal

    at = data.index(b'"features": ["+') + len(b'"features": ["+')
    (tmp_path / "othercpu.so").write_bytes(data[:at] + b"Q" + data[at + 1 :])
    with pytest.raises(LoadError, match="damaged library: its manifest was changed after export"):
        scriptc.load(tmp_path / "othercpu.so")
    reseal(tmp_path / "othercpu.so", SECTION)  # as exported for a CPU with feature Q
    with pytest.raises(LoadError, match="lacks Q"):
        scriptc.load(tmp_path / "othercpu.so")
    # a manifest whose keys or types were edited, a symbol renamed, with their digests made again: LoadError,
    # not the KeyError inside
    for k, (old, new) in enumerate(
        [
            (b'"signature"', b'"signaturX"'),
            (b'"float64[*]"', b'"floatX4[*]"'),
            (b"corpus_last_error\0", b"corpus_last_errox\0"),
        ]
    ):
        assert old in data
        (tmp_path / f"edited{k}.so").write_bytes(data.replace(old, new, 1))
        reseal(tmp_path / f"edited{k}.so", SECTION)
        with pytest.raises(LoadError, match="damaged library or manifest"):
            scriptc.load(tmp_path / f"edited{k}.so")


def test_load_refuses_changed_code_and_a_consistently_rewritten_manifest(built, tmp_path):
    """Two flipped bytes of machine code ran (SIGSEGV on a call); a manifest with two functions' C names
    swapped, still valid, ran the wrong function: both are LoadError now, before anything is loaded."""
    from scriptc.backend.export import SECTION
    from scriptc.backend.export.integrity import section_span

    where, _ = built
    path = where / "build" / "libcorpus.so"
    data = path.read_bytes()
    text_at, text_size = section_span(data, ".text")
    flipped = bytearray(data)
    for k in (text_at + text_size // 2, text_at + text_size // 2 + 1):
        flipped[k] ^= 0xFF
    (tmp_path / "flipped.so").write_bytes(bytes(flipped))
    with pytest.raises(LoadError, match="damaged library: its code does not match the digest its manifest records"):
        scriptc.load(tmp_path / "flipped.so")
    offset, size = section_span(data, SECTION)
    section = data[offset : offset + size]
    assert b'"corpus_norm"' in section and b'"corpus_pick"' in section
    swapped = (
        section.replace(b'"corpus_norm"', b'"corpus_tmp_"')
        .replace(b'"corpus_pick"', b'"corpus_norm"')
        .replace(b'"corpus_tmp_"', b'"corpus_pick"')
    )
    (tmp_path / "swapped.so").write_bytes(data[:offset] + swapped + data[offset + size :])
    with pytest.raises(LoadError, match="damaged library: its manifest was changed after export"):
        scriptc.load(tmp_path / "swapped.so")
    assert scriptc.load(path).norm(np.array([3.0, 4.0])) == 5.0


def test_code_with_lists_and_random_keys_links_and_loads(tmp_path):
    """Lists count their buffers apart (``scriptc.list.allocations``), which the library's runtime defines; a
    symbol it did not define made a library that reported success and then failed to link or load."""
    source = """import numpy as np
import scriptc


@scriptc.script
def listed(n: int) -> int:
    xs = [n, 2]
    xs.append(3)
    return len(xs) + xs[0]


@scriptc.script
def stacked(x: np.ndarray) -> np.ndarray:
    return np.concatenate((x, x)) + np.array([x[0], 1.0, 2.0, 3.0])


@scriptc.script
def draws(key: np.ndarray) -> np.ndarray:
    return scriptc.random.uniform(scriptc.random.split(key)[1], (3,))
"""
    mod = export_module(
        tmp_path,
        "withlists",
        source,
        [("listed", ["int"]), ("stacked", ["float64[*]"]), ("draws", ["uint32[*]"])],
        "build/libwithlists.so",
    )
    lib = scriptc.load(tmp_path / "build" / "libwithlists.so")
    x, key = np.array([0.5, 1.5]), scriptc.random.key(3)
    assert lib.listed(5) == mod.listed.py_func(5) == 8
    np.testing.assert_array_equal(lib.stacked(x), mod.stacked.py_func(x))
    np.testing.assert_array_equal(lib.draws(key), mod.draws(key))


def test_a_long_error_message_comes_back_whole(tmp_path):
    source = (
        "import scriptc\n\n\n@scriptc.script\ndef long_error(n: int) -> int:\n"
        '    if n > 0:\n        raise ValueError(f"{n} ' + "0123456789" * 150 + '")\n    return n\n'
    )
    mod = export_module(tmp_path, "longerror", source, [("long_error", ["int"])], "build/liblongerror.so")
    lib = scriptc.load(tmp_path / "build" / "liblongerror.so")
    with pytest.raises(ValueError) as ours:
        lib.long_error(5)
    with pytest.raises(ValueError) as theirs:
        mod.long_error.py_func(5)
    assert str(ours.value) == str(theirs.value) and len(str(ours.value)) == 1502


SIZES = [10**12, 2**40, 1023 * 2**40 + 2**39, 5 * 10**17, 123456789012345]


def test_an_array_too_big_to_allocate_is_numpys_memory_error(tmp_path):
    """NumPy's message, size in binary units included ("Unable to allocate 7.28 TiB for an array with shape
    (1000000000000, 1) and data type float64"), from the JIT and from an exported library (runtime.c writes
    the size); it was "out of memory"."""
    source = (
        "import numpy as np\nimport scriptc\n\n\n@scriptc.script\ndef big(n: int) -> np.ndarray:\n"
        "    return np.ones((n, 1))\n\n\n@scriptc.script\ndef big1(n: int) -> np.ndarray:\n"
        "    return np.zeros(n, dtype=np.float32)\n"
    )
    mod = export_module(tmp_path, "toobig", source, [("big", ["int"]), ("big1", ["int"])], "build/libtoobig.so")
    lib = scriptc.load(tmp_path / "build" / "libtoobig.so")
    for n in SIZES:
        for name in ("big", "big1"):
            with pytest.raises(MemoryError) as numpy_error:
                getattr(mod, name).py_func(n)
            for fn in (getattr(mod, name), getattr(lib, name)):
                with pytest.raises(MemoryError) as ours:
                    fn(n)
                assert str(ours.value) == str(numpy_error.value), (name, n)


NARROW = """
import numpy as np


def total(x: np.ndarray):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s, x[0] * 2


def wrap(a: np.ndarray) -> None:
    for i in range(a.shape[0]):
        a[i] = a[i] + 200
"""


def test_narrow_element_arithmetic_is_numpys_in_a_library(tmp_path):
    """An np.float32 result leaves the library as the double holding it (C has no NumPy scalars); the float32
    accumulation and the uint8 wrap inside are NumPy's."""
    mod = export_module(
        tmp_path, "narrow", NARROW, [("total", ["float32[*]"]), ("wrap", ["uint8[*]"])], "build/libnarrow.so"
    )
    assert (
        "int narrow_total(const scriptc_array *x, double *out0, double *out1);"
        in (tmp_path / "build" / "narrow.h").read_text()
    )
    lib = scriptc.load(str(tmp_path / "build" / "libnarrow.so"))
    x = np.random.default_rng(5).standard_normal(1001).astype(np.float32)
    assert lib.total(x) == tuple(float(v) for v in mod.total(x))
    a, b = np.array([100, 3, 255], np.uint8), np.array([100, 3, 255], np.uint8)
    lib.wrap(a)
    with np.errstate(over="ignore"):
        mod.wrap(b)
    np.testing.assert_array_equal(a, b)
