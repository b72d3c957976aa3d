"""Code compiled once per process and called by every function that needs it: element-wise operators outside
fusion groups (``array_math.call_elementwise_kernel``) and copies (``arrays.copy_into``). One kernel serves
every node of its key (operator, dtypes, ranks, constant operands), so nothing about one node may leak into
it: each test compiles the node that makes the kernel first, then another that reuses it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from tests.util import filecheck


def native_ir(fn, *args) -> str:
    return fn.native_for_types(fn._bind(args, {})[0]).unoptimized_ir


def test_a_kernel_made_for_a_value_read_twice_serves_two_operands():
    @scriptc.script
    def square(a: np.ndarray) -> np.ndarray:
        s = a * a
        return s

    @scriptc.script
    def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        p = a * b
        return p

    a, b = np.arange(5.0), np.arange(5.0) + 10.0
    np.testing.assert_array_equal(square(a), a * a)  # compiles the kernel for float64 * float64
    np.testing.assert_array_equal(product(a, b), a * b)


def test_constant_operands_are_part_of_the_key_and_others_are_arguments():
    @scriptc.script
    def above_half(x: np.ndarray) -> np.ndarray:
        return x > 0.5

    @scriptc.script
    def above_quarter(x: np.ndarray) -> np.ndarray:
        return x > 0.25

    @scriptc.script
    def above(x: np.ndarray, t: float) -> np.ndarray:
        return x > t

    x = np.linspace(0.0, 1.0, 9)
    np.testing.assert_array_equal(above_half(x), x > 0.5)
    np.testing.assert_array_equal(above_quarter(x), x > 0.25)
    for t in (0.1, 0.6):
        np.testing.assert_array_equal(above(x, t), x > t)
    filecheck(native_ir(above_half, x), 'CHECK: call void @"scriptc.shared.ew_gt_float64_bool1_float641_double')
    filecheck(native_ir(above, x, 0.6), 'CHECK: call void @"scriptc.shared.ew_gt_float64_bool1_float641_f.double"')


def test_a_float_square_is_a_product_in_the_kernel_too():
    @scriptc.script
    def square(x: np.ndarray) -> np.ndarray:
        return x**2

    # values whose libm pow(x, 2.0) is not x * x (tests/e2e/test_user_kernels.py)
    x = np.array(
        [
            float.fromhex(h)
            for h in ("-0x1.6c5b774b54876p+2", "0x1.51eebf84b8720p+2", "0x1.ceb7f723998b0p+1", "-0x1.2da4e80b86597p+0")
        ]
    )
    np.testing.assert_array_equal(square(x), x**2)


def test_an_operator_that_raises_stays_inline():
    @scriptc.script
    def power(x: np.ndarray, k: int) -> np.ndarray:
        return x**k

    x = np.arange(1, 5)
    np.testing.assert_array_equal(power(x, 3), x**3)
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        power(x, -1)
    filecheck(
        native_ir(power, x, 3),
        """
CHECK-NOT: call void @"scriptc.shared.ew_pow
CHECK: call {{.*}}@"scriptc{{[0-9]+}}.ipow"
CHECK-NOT: call void @"scriptc.shared.ew_pow
""",
    )  # the power's own integer loop, not the shared kernel


LAYOUTS = st.sampled_from(["plain", "reversed", "strided", "column", "broadcast_row", "broadcast_col", "scalar"])


def layout(base: np.ndarray, how: str) -> np.ndarray:
    if how == "reversed":
        return base[::-1, ::-1]
    if how == "strided":
        return np.repeat(np.repeat(base, 2, axis=0), 2, axis=1)[::2, ::2]
    if how == "column":
        return np.asfortranarray(base)
    if how == "broadcast_row":
        return base[:1, :]
    if how == "broadcast_col":
        return base[:, :1]
    return base


# one operator per function: an operator alone is no fusion group, so each of these runs a shared kernel
@scriptc.script
def greater(a, b):
    return a > b


@scriptc.script
def plus(a, b):
    return a + b


@scriptc.script
def pick(m, a, b):
    return np.where(m, a, b)


@scriptc.script
def scaled(a, k: float):
    return a * k


DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "bool"]


def sample(rng, dtype: str, shape=(3, 4)) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        return (rng.standard_normal(shape) * 4).astype(dtype)
    low = 0 if dtype.startswith("u") else -60
    return rng.integers(low, 60, shape).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(LAYOUTS, LAYOUTS, st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.integers(0, 2**16))
def test_operands_of_every_layout_and_dtype_give_numpys_results(la, lb, da, db, seed):
    rng = np.random.default_rng(seed)
    a, b = layout(sample(rng, da), la), layout(sample(rng, db), lb)
    if lb == "scalar":
        b = b[0, 0].item()  # a Python scalar (bool, int or float), weak as NumPy 2 takes it
    for fn, args in ((greater, (a, b)), (plus, (a, b)), (pick, (a > 0, a, b)), (scaled, (a, 2.5))):
        with np.errstate(all="ignore"):
            try:
                want = fn.py_func(*args)
            except OverflowError as e:  # a Python int outside the array's dtype (uint8 + -28): the same error
                with pytest.raises(OverflowError) as got_error:
                    fn(*args)
                assert str(got_error.value) == str(e), fn.__name__
                continue
            got = fn(*args)
        assert got.dtype == want.dtype, fn.__name__
        np.testing.assert_array_equal(got, want, err_msg=fn.__name__)


def test_a_python_int_outside_the_arrays_dtype_raises_numpys_overflow_error():
    a = np.arange(4, dtype=np.uint8)
    for b in (-28, 300):
        with pytest.raises(OverflowError, match=f"Python integer {b} out of bounds for uint8"):
            plus(a, b)


def test_the_operators_above_run_shared_kernels():
    x = np.ones(3)
    for fn, args, name in (
        (greater, (x, x), "ew_gt"),
        (plus, (x, 1), "ew_add"),
        (pick, (x > 0, x, x), "ew_where"),
        (scaled, (x, 2.5), "ew_mul"),
    ):
        fn(*args)
        filecheck(native_ir(fn, *args), f'CHECK: call void @"scriptc.shared.{name}_')


def test_copies_of_every_dtype_pair_and_layout():
    @scriptc.script
    def assign(out, src):
        out[1:, ::2] = src
        return out

    for src_dtype, out_dtype in [
        ("float64", "float32"),
        ("int8", "float64"),
        ("bool", "int32"),
        ("float16", "float64"),
    ]:
        src = (np.arange(6).reshape(2, 3) % 3 - 1).astype(src_dtype)
        for s in (src, src[::-1], src[:, ::-1], src[:1]):
            out = np.zeros((3, 6), out_dtype)
            want = out.copy()
            want[1:, ::2] = s
            np.testing.assert_array_equal(assign(out, s), want)


CACHED = """
import json, sys
import numpy as np
import scriptc

@scriptc.script(cache=True)
def masks(x, y):
    m = x > 0.5
    print(m.sum())
    out = np.empty((2, x.shape[0]))
    out[0, :] = x
    out[1, :] = y
    return m, x * y, out

x, y = np.linspace(0, 1, 7), np.arange(7.0)
m, p, out = masks(x, y)
from scriptc.backend.llvm.runtime import disk_cache
print(json.dumps({"m": m.tolist(), "p": p.tolist(), "out": out.tolist(), "hits": disk_cache.stats["hits"],
                  "llvmlite": "llvmlite" in sys.modules}))
"""


def test_a_cache_hit_brings_the_kernels_it_calls(tmp_path):
    """The kernels a cached function calls are kept beside its entry and linked by a hit, without LLVM."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "prog.py").write_text(CACHED)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    env.pop("SCRIPTC_CACHE_DIR", None)

    def run():
        proc = subprocess.run(
            [sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.splitlines()[-1])

    x, y = np.linspace(0, 1, 7), np.arange(7.0)
    first, second = run(), run()
    for result in (first, second):
        assert result["m"] == (x > 0.5).tolist() and result["p"] == (x * y).tolist()
        assert result["out"] == [x.tolist(), y.tolist()]
    assert second["hits"] == 1 and not second["llvmlite"]
    assert list(tmp_path.glob("__pycache__/runtime-*.sco"))
