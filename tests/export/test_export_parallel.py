"""``scriptc export`` of parallel code and matrix products: prange loops and a large element-wise fusion group run
on the library's own copy of the thread pool, float products on the generated row loop (no OpenBLAS). Called
from C (inputs and outputs through files) and through ``scriptc.load``, checked against NumPy (products: within
1e-12 of the largest element in float64, their summation order is not BLAS's) and against the JIT (parallel
code with the same thread count: the same chunks, bit-identical); no leak under LeakSanitizer; a forked child
runs regions on a fresh pool; ``ldd`` still lists only the C and math libraries."""

from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

import scriptc
from tests.export.test_export import (
    compile_c,
    export,
    export_module,
    pytestmark,  # noqa: F401  (pytestmark: Linux, a C compiler)
    require_address_sanitizer,
)

KERNELS = """
import numpy as np
import scriptc

@scriptc.script
def psum(a: np.ndarray) -> float:
    s = 0.0
    for i in scriptc.prange(a.shape[0]):
        s += a[i] * a[i]
    return s

@scriptc.script
def prow(m: np.ndarray) -> np.ndarray:
    out = np.empty(m.shape[0])
    for i in scriptc.prange(m.shape[0]):
        t = 0.0
        for j in range(m.shape[1]):
            t += np.sin(m[i, j]) * m[i, j]
        out[i] = t
    return out

@scriptc.script
def pshift(a: np.ndarray, k: int) -> float:
    s = 0.0
    for i in scriptc.prange(a.shape[0]):
        s += a[i + k]
    return s

@scriptc.script
def fused(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.exp(x) * 2.0 + y * y - x

@scriptc.script
def mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b

@scriptc.script
def mmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)

@scriptc.script
def mdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.dot(a, b)

@scriptc.script
def vdot(a: np.ndarray, b: np.ndarray) -> float:
    return a @ b
"""

SIGNATURES = [
    ("psum", ["float64[*]"]),
    ("prow", ["float64[*,*]"]),
    ("pshift", ["float64[*]", "int"]),
    ("fused", ["float64[*]", "float64[*]"]),
    ("mm", ["float64[*,*]", "float64[*,*]"]),
    ("mm", ["float64[*]", "float64[*,*]"]),
    ("mm", ["float32[*,*]", "float32[*,*]"]),
    ("mm", ["int64[*,*]", "int64[*,*]"]),
    ("mm", ["float64[*,*]", "float32[*,*]"]),
    ("mmul", ["float64[*,*,*]", "float64[*,*,*]"]),
    ("mdot", ["float64[*,*,*]", "float64[*,*]"]),
    ("vdot", ["float64[*]", "float64[*]"]),
]
N = 1 << 19  # elements of the fusion group and the prange reductions: past PARALLEL_MIN (2**18)

# the C program: "<case> <function> <inputs...>": read each input (files: int64 ndim, dtype, shape, then the
# C-contiguous data), call, write the result to <case>.out in the same format (a scalar as a 0-d array)
MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "par.h"

static const int64_t itemsize[] = {8, 4, 2, 8, 4, 2, 1, 1, 1};

static scriptc_array load(const char *dir, const char *name) {
    char path[512]; snprintf(path, sizeof path, "%s/%s.in", dir, name);
    FILE *f = fopen(path, "rb"); if (!f) { perror(path); exit(2); }
    scriptc_array a; memset(&a, 0, sizeof a);
    int64_t head[2]; fread(head, 8, 2, f);
    a.ndim = (int32_t)head[0]; a.dtype = (int32_t)head[1];
    fread(a.shape, 8, (size_t)a.ndim, f);
    int64_t n = 1;
    for (int k = a.ndim - 1; k >= 0; k--) { a.strides[k] = n * itemsize[a.dtype]; n *= a.shape[k]; }
    a.data = malloc((size_t)(n * itemsize[a.dtype]) + 1);
    fread(a.data, (size_t)itemsize[a.dtype], (size_t)n, f);
    fclose(f);
    return a;
}

static void save(const char *dir, const char *name, const scriptc_array *a) {
    char path[512]; snprintf(path, sizeof path, "%s/%s.out", dir, name);
    FILE *f = fopen(path, "wb");
    int64_t head[2] = {a->ndim, a->dtype}, index[SCRIPTC_MAX_DIMS] = {0}, n = 1;
    fwrite(head, 8, 2, f); fwrite(a->shape, 8, (size_t)a->ndim, f);
    for (int k = 0; k < a->ndim; k++) n *= a->shape[k];
    for (int64_t e = 0; e < n; e++) {          /* element by element in C order, whatever the strides */
        int64_t off = 0;
        for (int k = 0; k < a->ndim; k++) off += index[k] * a->strides[k];
        fwrite((char *)a->data + off, (size_t)itemsize[a->dtype], 1, f);
        for (int k = a->ndim - 1; k >= 0 && ++index[k] == a->shape[k]; k--) index[k] = 0;
    }
    fclose(f);
}

static void save_double(const char *dir, const char *name, double x) {
    scriptc_array a; memset(&a, 0, sizeof a); a.data = &x; a.dtype = SCRIPTC_FLOAT64; save(dir, name, &a);
}

#define ARRAY_CASE(call, nargs) do { \
    scriptc_array out; int rc = (call); \
    if (rc) printf("%s: error %s\n", argv[k], par_last_error()); \
    else { save(dir, argv[k], &out); par_release(&out); } \
    for (int j = 0; j < nargs; j++) free(in[j].data); } while (0)

int main(int argc, char **argv) {
    const char *dir = argv[1];
    for (int k = 2; k < argc; k++) {          /* each argument: a case; its inputs are <case>.0.in, <case>.1.in */
        char name[256]; scriptc_array in[2];
        const char *fn = strchr(argv[k], '-') + 1;
        for (int j = 0; j < 2; j++) {
            snprintf(name, sizeof name, "%s.%d", argv[k], j);
            char path[512]; snprintf(path, sizeof path, "%s/%s.in", dir, name);
            if (access(path, R_OK) == 0) in[j] = load(dir, name); else memset(&in[j], 0, sizeof in[j]);
        }
        double r;
        if (!strcmp(fn, "psum")) { if (!par_psum(&in[0], &r)) save_double(dir, argv[k], r); free(in[0].data); }
        else if (!strcmp(fn, "pshift")) {
            int rc = par_pshift(&in[0], 1, &r);
            printf("%s: %d %s\n", argv[k], rc != 0, rc ? par_last_error() : ""); free(in[0].data);
        }
        else if (!strcmp(fn, "vdot")) { if (!par_vdot(&in[0], &in[1], &r)) save_double(dir, argv[k], r);
                                        free(in[0].data); free(in[1].data); }
        else if (!strcmp(fn, "prow")) ARRAY_CASE(par_prow(&in[0], &out), 1);
        else if (!strcmp(fn, "fused")) ARRAY_CASE(par_fused(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mm")) ARRAY_CASE(par_mm(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mm_1")) ARRAY_CASE(par_mm_1(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mm_2")) ARRAY_CASE(par_mm_2(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mm_3")) ARRAY_CASE(par_mm_3(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mm_4")) ARRAY_CASE(par_mm_4(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mmul")) ARRAY_CASE(par_mmul(&in[0], &in[1], &out), 2);
        else if (!strcmp(fn, "mdot")) ARRAY_CASE(par_mdot(&in[0], &in[1], &out), 2);
        else { printf("unknown case %s\n", argv[k]); return 2; }
    }
    /* a forked child has none of the parent's workers: its regions start a fresh pool */
    scriptc_array x = load(dir, "fork"), out;
    double before, after = 0;
    if (par_psum(&x, &before)) return 3;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = par_psum(&x, &after) || after != before || par_fused(&x, &x, &out);
        if (!bad) par_release(&out);
        free(x.data);
        _exit(bad ? 4 : 0);
    }
    int status; waitpid(pid, &status, 0);
    printf("fork %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 99);
    free(x.data);
    return 0;
}
"""

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def write_array(path, a) -> None:
    a = np.ascontiguousarray(a)
    with open(path, "wb") as f:
        np.array([a.ndim, DTYPES.index(a.dtype.name), *a.shape], np.int64).tofile(f)
        a.tofile(f)


def read_array(path):
    raw = path.read_bytes()
    ndim, dtype = np.frombuffer(raw[:16], np.int64)
    shape = tuple(np.frombuffer(raw[16 : 16 + 8 * ndim], np.int64))
    return np.frombuffer(raw[16 + 8 * ndim :], DTYPES[dtype]).reshape(shape)


def cases():
    """case name -> (C function, inputs, NumPy's result, relative tolerance (of the largest element))."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    m = rng.standard_normal((3000, 200))
    a, b = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    a3, b3 = rng.standard_normal((5, 40, 30)), rng.standard_normal((1, 30, 20))
    ia, ib = rng.integers(-1000, 1000, (33, 17)), rng.integers(-1000, 1000, (17, 9))
    f32a, f32b = rng.standard_normal((70, 50)).astype(np.float32), rng.standard_normal((50, 60)).astype(np.float32)
    return {
        "c0-psum": ("psum", [x], np.dot(x, x), 1e-12),
        "c1-prow": ("prow", [m], (np.sin(m) * m).sum(axis=1), 1e-12),
        "c2-fused": ("fused", [x, y], np.exp(x) * 2.0 + y * y - x, 1e-14),  # exp: libmvec, within an ulp
        "c3-mm": ("mm", [a, b], a @ b, 1e-12),
        "c4-mm_1": ("mm_1", [a[7], b], a[7] @ b, 1e-12),
        "c5-mm_2": ("mm_2", [f32a, f32b], f32a @ f32b, 1e-5),
        "c6-mm_3": ("mm_3", [ia, ib], ia @ ib, 0),
        "c7-mm_4": (
            "mm_4",
            [a[:30, :40], b[:40, :20].astype(np.float32)],
            a[:30, :40] @ b[:40, :20].astype(np.float32),
            1e-12,
        ),
        "c8-mmul": ("mmul", [a3, b3], np.matmul(a3, b3), 1e-12),
        "c9-mdot": ("mdot", [a3, b3[0]], np.dot(a3, b3[0]), 1e-12),
        "c10-vdot": ("vdot", [a[3], b[4]], a[3] @ b[4], 1e-12),
        "c11-mm": ("mm", [a[:0], b], a[:0] @ b, 0),
        "c12-mm": ("mm", [a[:, :0], b[:0]], a[:, :0] @ b[:0], 0),
    }


def assert_close(got, want, tol) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if tol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        scale = np.abs(want).max() if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    where = tmp_path_factory.mktemp("export_parallel")
    mod = export_module(where, "par_kernels", KERNELS, SIGNATURES, "build/libpar.so")
    data = where / "data"
    data.mkdir()
    for case, (_, inputs, _, _) in cases().items():
        for j, arr in enumerate(inputs):
            write_array(data / f"{case}.{j}.in", arr)
    write_array(data / "c13-pshift.0.in", np.ones(N))
    write_array(data / "fork.in", np.random.default_rng(5).standard_normal(N))
    return where, mod


def link(where) -> list[str]:
    return ["-Lbuild", "-lpar", f"-Wl,-rpath,{where / 'build'}"]


def run_main(where, exe, threads: int, env=None):
    env = dict(env or os.environ, SCRIPTC_NUM_THREADS=str(threads))
    return subprocess.run(
        [str(exe), str(where / "data"), *cases(), "c13-pshift"], cwd=where, capture_output=True, text=True, env=env
    )


def check_outputs(where, mod, run) -> None:
    assert run.returncode == 0, run.stderr
    for case, (_, _, want, tol) in cases().items():
        assert_close(read_array(where / "data" / f"{case}.out").reshape(np.shape(want)), want, tol)
    with pytest.raises(IndexError) as cpython:
        mod.pshift.py_func(np.ones(N), 1)
    assert f"c13-pshift: 1 IndexError: {cpython.value}\n" in run.stdout
    assert "fork 0\n" in run.stdout


def test_the_library_with_the_pool_needs_only_the_c_and_math_libraries(built):
    where, _ = built
    lib = where / "build" / "libpar.so"
    ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout
    libs = [line.split()[0] for line in ldd.splitlines() if line.strip()]
    assert libs and all(
        x.split(".so")[0].rsplit("/", 1)[-1] in ("linux-vdso", "libc", "libm", "libmvec", "ld-linux-x86-64")
        for x in libs
    ), libs
    nm = subprocess.run(["nm", str(lib)], capture_output=True, text=True).stdout
    dynamic = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert " t scriptc.pool.run\n" in nm and "scriptc.pool.run" not in dynamic  # the library's own, hidden
    assert "scriptc.blas" not in nm


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_c_program_gets_numpys_results(built, threads):
    where, mod = built
    exe = compile_c(where, MAIN_C, "main", "-O1", link=link(where))
    check_outputs(where, mod, run_main(where, exe, threads))


def test_no_leak_under_leak_sanitizer(built):
    where, mod = built
    require_address_sanitizer(where)
    exe = compile_c(where, MAIN_C, "main_asan", "-fsanitize=address", "-g", link=link(where))
    run = run_main(where, exe, 2, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
    assert "leak" not in run.stderr.lower(), run.stderr
    check_outputs(where, mod, run)


@pytest.fixture(scope="module")
def lib(built):
    where, _ = built
    return scriptc.load(where / "build" / "libpar.so")


def library_threads(where) -> int:
    """The loaded library's thread count (its ``scriptc.pool.threads``; dlopen gives the same copy)."""
    handle = ctypes.CDLL(str(where / "build" / "libpar.so"))
    return ctypes.c_int64.in_dll(handle, "scriptc.pool.threads").value


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_loaded_parallel_code_is_the_jits(built, lib, threads):
    """The same thread count gives the same chunks as the JIT: bit-identical results, and NumPy's within 1e-12.
    scriptc.set_num_threads reaches the loaded library too."""
    where, mod = built
    old = scriptc.get_num_threads()
    assert library_threads(where) == old
    try:
        scriptc.set_num_threads(threads)
        assert library_threads(where) == threads
        all_cases = cases()
        for case in ("c0-psum", "c1-prow", "c2-fused"):
            fname, inputs, want, tol = all_cases[case]
            fn = getattr(lib, fname)
            got = fn(*inputs)
            assert_close(got, want, tol)
            np.testing.assert_array_equal(got, getattr(mod, fname)(*inputs))
        with pytest.raises(IndexError) as ours:
            lib.pshift(np.ones(N), 1)
        with pytest.raises(IndexError) as theirs:
            mod.pshift(np.ones(N), 1)
        assert str(ours.value) == str(theirs.value)
    finally:
        scriptc.set_num_threads(old)


def test_loaded_products_match_numpy(lib):
    for case, (fname, inputs, want, tol) in cases().items():
        if fname.startswith(("mm", "mdot", "vdot")):
            assert_close(lib.mm(*inputs) if fname.startswith("mm_") else getattr(lib, fname)(*inputs), want, tol)
    a = np.random.default_rng(9).standard_normal((60, 50))
    assert_close(lib.mm(a.T, a[:, ::2]), a.T @ a[:, ::2], 1e-12)  # views: strided rows, no copy needed
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        lib.mm(a, a)


STATIC_C = r"""
#include <stdio.h>
#include <string.h>
#include "par.h"
int main(int argc, char **argv) {
    static double xs[1 << 19];
    FILE *f = fopen(argv[1], "rb");
    size_t n = fread(xs, 8, 1 << 19, f);
    fclose(f);
    scriptc_array x; memset(&x, 0, sizeof x);
    x.data = xs; x.shape[0] = (int64_t)n; x.strides[0] = 8; x.ndim = 1; x.dtype = SCRIPTC_FLOAT64;
    double s;
    int rc = par_psum(&x, &s);
    printf("%d %.17g\n", rc, s);
    return rc;
}
"""


def test_emit_obj_with_the_pool_links_statically_and_honours_scriptc_num_threads(built):
    """A static object carries the pool and its start-up too; SCRIPTC_NUM_THREADS sets the chunks as in the JIT."""
    where, mod = built
    result = export(where, ["par_kernels.py:psum", "--types", "float64[*]", "-o", "static/libpar.o", "--emit=obj"])
    assert result.returncode == 0, result.stderr
    exe = compile_c(
        where, STATIC_C.replace('"par.h"', '"static/par.h"'), "static_main", link=["static/libpar.o", "-lm", "-pthread"]
    )
    x = np.random.default_rng(11).standard_normal(1 << 19)
    x.tofile(where / "psum.bin")
    old = scriptc.get_num_threads()
    try:
        for threads in (1, 2, 5):
            run = subprocess.run(
                [str(exe), str(where / "psum.bin")],
                capture_output=True,
                text=True,
                env=dict(os.environ, SCRIPTC_NUM_THREADS=str(threads)),
            )
            scriptc.set_num_threads(threads)
            assert run.returncode == 0 and run.stdout == f"0 {mod.psum(x):.17g}\n", (threads, run.stdout, run.stderr)
    finally:
        scriptc.set_num_threads(old)
