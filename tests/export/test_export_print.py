"""Printed arrays, f-strings and raise with computed messages in exported libraries: a C program calls the
exported functions and its output (stdout, ``<lib>_last_error()``) must be CPython's, running the same functions
undecorated (NumPy's ``str(ndarray)``, ``format()``, ``str(exception)``)."""

from __future__ import annotations

import contextlib
import io
import struct
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from tests.export.test_export import CC, compile_c, export, export_module, pytestmark  # noqa: F401 -- the same skip

KERNELS = """
import numpy as np
import scriptc

@scriptc.script
def show(a: np.ndarray) -> int:
    print(a)
    return 0

@scriptc.script
def show_in_tuple(a: np.ndarray, n: int) -> int:
    print((a, n), f"{a!r}", f"<{a}>", sep="|", end="~\\n")
    return 0

@scriptc.script
def describe(i: int, x: float, b: bool):
    s = "h\\u00e9llo" if i > 0 else ("it's" if i < 0 else "")
    return f"|{i}|{i:5d}|{i:<6}|{i:^7}|{i:+}|{i:,}|{i:_x}|{i:#x}|{i:#o}|{i:#b}|{i:X}|{i:08d}|{i:e}|{i:%}|" \\
           f"{i:_b}|{i: d}|{i:=+9}|{i:.2f}|{i!r:>5}|{i:#_o}|{i:#X}|{i:0=8}|{i:g}|\\n" \\
           f"{x}|{x!r}|{x:.3f}|{x:10.4e}|{x:g}|{x:.3g}|{x:+.2%}|{x:,.2f}|{x:*^12.1f}|{x:.2}|{x:z.1f}|{x:E}|" \\
           f"{x:G}|{x:#g}|{x:#.0f}|{x:_}|{x:.0e}|{x:020.3f}|{x:-^+15,.1f}|{x: .4}|{x:.12g}|{x:%}|{x:F}|{x:.0%}|" \\
           f"{x:.1f}{{}}{x!s:>10}|{x:.1}|{x:.0}|{x:+.1}|\\n" \\
           f"{b}|{b:>6}|{b!r}|{b:d}|{b:x}|{b:.1f}|{s}|{s!r}|{s:>8}|{s:.2}|{s:*<6}|{s:^9}|{s!r:>9}|{s:05}|{s:\\u00e9^7}|"

@scriptc.script
def say(i: int, x: float, b: bool) -> int:
    print(describe(i, x, b))
    return i

@scriptc.script
def check(n: int, x: float) -> int:
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n} (x={x:.3f})")
    if n == 0:
        raise KeyError(f"k{n}")
    if n == 1:
        raise IndexError("index", n, x)
    if n == 2:
        raise RuntimeError(x)
    if n == 3:
        raise TypeError((n, "three"))
    return n
"""

# the signatures of show, in order: the C names are show, show_1, ...
SHOW = [
    ("float64", 1),
    ("float64", 2),
    ("float64", 3),
    ("float32", 1),
    ("float32", 2),
    ("float16", 1),
    ("int64", 1),
    ("int64", 2),
    ("int32", 1),
    ("int16", 1),
    ("int8", 1),
    ("uint8", 1),
    ("bool", 1),
    ("bool", 2),
    ("uint32", 1),
]
DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "uint32"]

DRIVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prints.h"

/* Reads records: int32 function (0: show, 1: show_in_tuple), int32 dtype, int32 rank, int32 transposed,
   int64 shape[rank], then the C-order data; calls the exported function for them. */
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    int32_t head[4];
    while (fread(head, 4, 4, f) == 4) {
        scriptc_array a; memset(&a, 0, sizeof a);
        a.dtype = head[1]; a.ndim = head[2];
        if (fread(a.shape, 8, (size_t)a.ndim, f) != (size_t)a.ndim) return 2;
        int64_t size = 1;
        for (int k = 0; k < a.ndim; k++) size *= a.shape[k];
        static const int itemsize[] = {8, 4, 2, 8, 4, 2, 1, 1, 1, 4};
        int64_t at = itemsize[a.dtype];
        for (int k = a.ndim - 1; k >= 0; k--) { a.strides[k] = at; at *= a.shape[k]; }
        a.data = malloc(size * itemsize[a.dtype] + 1);
        if (fread(a.data, itemsize[a.dtype], (size_t)size, f) != (size_t)size) return 3;
        if (head[3]) {       /* print the transpose: a view with the axes reversed */
            for (int k = 0; k < a.ndim / 2; k++) {
                int64_t s = a.shape[k], t = a.strides[k];
                a.shape[k] = a.shape[a.ndim - 1 - k]; a.strides[k] = a.strides[a.ndim - 1 - k];
                a.shape[a.ndim - 1 - k] = s; a.strides[a.ndim - 1 - k] = t;
            }
        }
        int64_t r;
        int rc = -1;
        if (head[0] == 1) rc = prints_show_in_tuple(&a, 7, &r);
        else switch (a.dtype * 16 + a.ndim) {
%CASES%
        }
        if (rc) printf("error %s\n", prints_last_error());
        free(a.data);
    }
    fclose(f);
    return 0;
}
"""

SCALARS_C = r"""
#include <math.h>
#include <stdio.h>
#include "prints.h"

int main(void) {
    static const int64_t ints[] = {%INTS%};
    static const double floats[] = {%FLOATS%};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        int64_t r;
        if (prints_say(ints[k], floats[k], k % 2, &r)) printf("error %s\n", prints_last_error());
        const char *s;
        if (prints_describe(ints[k], floats[k], k % 3 == 0, &s) == 0) {
            printf("[%s]\n", s);
            prints_release_str(s);
        }
        if (prints_check(ints[k] % 6 - 1, floats[k], &r)) printf("error %s\n", prints_last_error());
        else printf("ok %lld\n", (long long)r);
    }
    fflush(stdout);
    return 0;
}
"""

INTS = [0, 7, -255, 1234567, -9223372036854775807 - 1, 9223372036854775807, 1, 2, 3, 4, 5, -1, 100, -1000000]
FLOATS = [
    0.0,
    -0.0,
    1.5,
    -1234.5678,
    1e-7,
    1e22,
    float("nan"),
    float("inf"),
    float("-inf"),
    0.125,
    2.5,
    0.05,
    123456789.987654321,
    -9.999999e-5,
]


def c_double(x: float) -> str:
    return (
        "NAN"
        if x != x
        else ("INFINITY" if x == float("inf") else "-INFINITY")
        if abs(x) == float("inf")
        else float.hex(x)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    where = tmp_path_factory.mktemp("export_print")
    signatures = [("show", [f"{dtype}[{','.join(['*'] * rank)}]"]) for dtype, rank in SHOW] + [
        ("show_in_tuple", ["float64[*]", "int"]),
        ("describe", ["int", "float", "bool"]),
        ("say", ["int", "float", "bool"]),
        ("check", ["int", "float"]),
    ]
    mod = export_module(where, "print_kernels", KERNELS, signatures, "build/libprints.so")
    cases = "\n".join(
        f"        case {DTYPES.index(d) * 16 + r}: rc = prints_show{f'_{k}' if k else ''}(&a, &r); break;"
        for k, (d, r) in enumerate(SHOW)
    )
    driver = compile_c(
        where,
        DRIVER_C.replace("%CASES%", cases),
        "driver",
        "-O1",
        link=["-Lbuild", "-lprints", f"-Wl,-rpath,{where / 'build'}"],
    )
    return where, mod, driver


def record(a: np.ndarray, fn: int = 0, transposed: bool = False) -> bytes:
    data = np.ascontiguousarray(a.T if transposed else a)
    return (
        struct.pack("<4i", fn, DTYPES.index(a.dtype.name), a.ndim, int(transposed))
        + struct.pack(f"<{a.ndim}q", *data.shape)
        + data.tobytes()
    )


def run_driver(built, arrays) -> str:
    """What the C program prints for ``arrays`` ((array, function, transposed) each)."""
    where, _, driver = built
    (where / "arrays.bin").write_bytes(b"".join(record(*x) for x in arrays))
    return subprocess.run([str(driver), str(where / "arrays.bin")], capture_output=True, text=True, check=True).stdout


def expected(mod, arrays) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for a, fn, _ in arrays:
            if fn:
                mod.show_in_tuple.py_func(a, 7)
            else:
                mod.show.py_func(a)
    return buf.getvalue()


def cases() -> list:
    rng = np.random.default_rng(3)
    f = [
        np.array([1.0, 2.5, -3.25]),
        np.array([0.1, 0.2, 1 / 3]),
        np.array([1e-5, 1.0]),
        np.array([1e8, 1.0]),
        np.array([99999999.0, 0.5]),
        np.array([-0.0, 0.0, 1.5]),
        np.array([np.nan, np.inf, -np.inf]),
        np.array([np.nan, 1.5, -np.inf, 1e-9]),
        np.array([1e100, 1e-100, -1e5]),
        np.array([1.0, 1000.0]),
        np.array([1.0, 1000.1]),
        np.array([0.0001, 0.01]),
        np.array([5e-324, 1.7976931348623157e308]),
        np.array([123456.78901234, 0.5]),
        np.array([]),
        np.arange(1500.0),
        np.arange(30.0) / 7,
        rng.standard_normal(40),
        np.array([3.0]),
        np.array([-np.nan]),
        np.array([0.0, 0.0]),
        np.array([1.0, 2.0, 3.0]) * 1e-4,
        np.array([12345678.9, 0.1]),
    ]
    out = [(a, 0, False) for a in f]
    out += [
        (np.arange(12.0).reshape(3, 4) / 3, 0, False),
        (np.arange(12.0).reshape(3, 4) / 3, 0, True),
        (rng.standard_normal((4, 12)) * 1000, 0, False),
        (np.arange(2000.0).reshape(40, 50), 0, False),
        (np.zeros((2, 0)), 0, False),
        (np.arange(24.0).reshape(2, 3, 4) - 11.5, 0, False),
        (np.arange(3000.0).reshape(10, 15, 20), 0, False),
        (np.zeros((0, 3, 2)), 0, False),
    ]
    out += [
        (np.array([0.1, 1.5, 2.0e6], np.float32), 0, False),
        (np.array([1 / 3, 100.0], np.float32), 0, False),
        (np.array([0.0001, 0.01], np.float32), 0, False),
        (np.array([999999.0, 1.0], np.float32), 0, False),
        (np.arange(6, dtype=np.float32).reshape(2, 3) / 7, 0, False),
        (np.array([0.1, 65504.0, -2.5, 1e-4], np.float16), 0, False),
        (np.array([0.0001, 0.01], np.float16), 0, False),
        (np.array([999.9, 1.0], np.float16), 0, False),
        (np.array([1 / 3, np.nan], np.float16), 0, False),
        (np.array([0.015625, -(2.0**-14)], np.float16), 0, False),
        (np.arange(-1000, 1000, dtype=np.float16), 0, False),
    ]
    out += [
        (np.array([1, -20, 300]), 0, False),
        (np.arange(-2000, 2000).reshape(4, 1000), 0, False),
        (np.arange(60).reshape(3, 20) ** 3, 0, False),
        (np.array([2**31 - 1, -(2**31)], np.int32), 0, False),
        (np.array([-32768, 5], np.int16), 0, False),
        (np.array([-128, 0, 127], np.int8), 0, False),
        (np.array([0, 255], np.uint8), 0, False),
        (np.array([0, 2**32 - 1], np.uint32), 0, False),
        (np.array([True, False, True]), 0, False),
        (np.array([[True], [False]]), 0, False),
        (np.arange(100) % 3 == 0, 0, False),
        (np.array([], np.int8), 0, False),
        (np.array([], bool), 0, False),
    ]
    out += [
        (a, 1, False)
        for a in (
            np.array([1.0, 2.5]),
            np.array([]),
            np.arange(1200.0),
            np.arange(20.0) * 1e5,
            np.array([np.nan, -1.0]),
            np.arange(14.0) * 1.1,
        )
    ]
    return out


def test_printed_arrays_are_numpys_text(built):
    _, mod, _ = built
    arrays = cases()
    assert run_driver(built, arrays) == expected(mod, arrays)


floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
magnitudes = st.sampled_from([1.0, 1e-12, 1e-5, 1e-3, 1.0, 10.0, 1e4, 1e7, 1e9, 1e30, 1e300])


@st.composite
def float_arrays(draw):
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "float16"]))
    shape = draw(
        st.sampled_from(
            [(0,), (1,), (3,), (7,), (40,), (1100,)] if dtype != "float32" else [(1, 1), (3, 4), (2, 30), (40, 30)]
        )
    )
    size = int(np.prod(shape))
    scale = draw(magnitudes)
    base = draw(st.lists(floats, min_size=1, max_size=8))
    rounding = draw(st.sampled_from([None, 0, 1, 3, 8]))
    sign = draw(st.sampled_from([1.0, -1.0]))
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.resize(np.array(base) * scale, size) * sign
        if rounding is not None:
            values = np.round(values, rounding)
        return values.astype(dtype).reshape(shape)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(float_arrays(), min_size=1, max_size=6))
def test_random_float_arrays_print_as_numpy_prints_them(built, arrays):
    _, mod, _ = built
    records = [(a, 0, False) for a in arrays]
    assert run_driver(built, records) == expected(mod, records)


def test_f_strings_and_raised_messages_are_cpythons(built):
    where, mod, _ = built
    source = SCALARS_C.replace("%INTS%", ", ".join(f"{i}LL" if i > -(2**63) else "INT64_MIN" for i in INTS))
    source = source.replace("%FLOATS%", ", ".join(c_double(x) for x in FLOATS))
    exe = compile_c(
        where,
        source.replace("#include <math.h>", "#include <math.h>\n#include <stdint.h>"),
        "scalars",
        "-O1",
        link=["-Lbuild", "-lprints", f"-Wl,-rpath,{where / 'build'}"],
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    lines, buf = [], io.StringIO()
    for k, (i, x) in enumerate(zip(INTS, FLOATS)):
        with contextlib.redirect_stdout(buf):
            mod.say.py_func(i, x, bool(k % 2))
        lines.append(buf.getvalue())
        buf.seek(0)
        buf.truncate()
        lines.append(f"[{mod.describe.py_func(i, x, k % 3 == 0)}]\n")
        try:
            lines.append(f"ok {mod.check.py_func(i % 6 - 1 if i >= 0 else -((-i) % 6) - 1, x)}\n")
        except Exception as e:  # noqa: BLE001
            lines.append(f"error {type(e).__name__}: {e}\n" if str(e) else f"error {type(e).__name__}\n")
    assert out == "".join(lines)


def test_loaded_library_formats_returns_and_raises_as_cpython(built):
    where, mod, _ = built
    import scriptc

    lib = scriptc.load(where / "build" / "libprints.so")
    for i, x in ((5, 2.5), (-3, -0.0), (1234567, 1e22), (0, 0.0), (7, 1e-7)):
        assert lib.describe(i, x, True) == mod.describe.py_func(i, x, True)
    for n, x in ((-2, 0.125), (0, 1.0), (1, 2.0), (2, float("nan")), (3, 0.0)):
        with pytest.raises(Exception) as ours:
            lib.check(n, x)
        with pytest.raises(Exception) as theirs:
            mod.check.py_func(n, x)
        assert type(ours.value) is type(theirs.value)
        if len(theirs.value.args) == 1 and not isinstance(theirs.value, KeyError):
            assert str(ours.value) == str(theirs.value)


UNSUPPORTED = """
import numpy as np
import scriptc

@scriptc.script
def locale_number(x: float) -> int:
    print(f"{x:n}")
    return 0

@scriptc.script
def spec_on_array(a: np.ndarray) -> int:
    print(f"{a:>5}")
    return 0

@scriptc.script
def rejected_spec(i: int) -> int:
    print(f"{i:.2d}")
    return 0

@scriptc.script
def zero_padded_groups(i: int) -> int:
    print(f"{i:012,}")
    return 0
"""


@pytest.mark.parametrize(
    "name, types, message",
    [
        ("locale_number", ["float"], "{:n} (a float value): the format spec is not supported in exported code"),
        ("spec_on_array", ["float64[*]"], "takes no format spec (CPython raises TypeError)"),
        ("rejected_spec", ["int"], "CPython raises ValueError: Precision not allowed in integer format specifier"),
        ("zero_padded_groups", ["int"], "zero padding with grouping"),
    ],
)
def test_unsupported_formatting_is_a_clear_export_error(tmp_path, name, types, message):
    (tmp_path / "bad_kernels.py").write_text(UNSUPPORTED)
    result = export(tmp_path, [f"bad_kernels.py:{name}", "--types", *types, "-o", "bad/libbad.so"])
    assert result.returncode == 1 and message in result.stderr, result.stderr
