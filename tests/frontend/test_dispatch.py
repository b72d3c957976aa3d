"""The dispatcher: unannotated parameters specialised on the kinds passed (as numba does), eager compilation
with ``signatures=``, numba's signature-string first argument, and arrays from other libraries (DLPack, the
array interface, torch) viewed without copying. Each against CPython + NumPy 2, natively and in the reference
interpreter."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc
from scriptc.function import GraphNeedsTypes
from scriptc.signatures import format_signature, from_numba, parse_signature
from scriptc.ir.types import FLOAT, INT, ListType, TensorType
from tests.util import assert_matches_python, run_threads_interleaved, same_value


def both(fn, *args):
    """Compiled natively and interpreted, each against CPython."""
    assert_matches_python(fn, *args)
    assert_matches_python(fn, *args, runner=fn.interpret)


# -- 1. unannotated parameters --------------------------------------------------------------------------------


@scriptc.script
def add(x, y):
    return x + y


@scriptc.script
def scaled_sum(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] * 2
    return s


@scriptc.script
def total(x):
    return np.sum(x * x)


@scriptc.script
def pick(flag, a, b):
    if flag:
        return a
    return b


@scriptc.script
def bump(x, by):
    x += by
    return x


@scriptc.script
def list_sum(xs):
    s = 0
    for v in xs:
        s += v
    return s


@scriptc.script
def mixed(x: int, y):
    return x * y


@pytest.mark.parametrize("args", [(1, 2), (1.5, 2), (2, 0.25), (True, False), (True, 3), (-7, 2.5), (2**62, 2**62 - 1)])
def test_unannotated_scalars_follow_python(args):
    both(add, *args)


def test_each_kind_compiles_its_own_signature():
    add(1, 2)
    add(1.0, 2)
    add(True, True)
    for sig in ("int, int", "float, int", "bool, bool"):
        assert sig in add.signatures
    assert add(True, True) == 2 and type(add(True, True)) is int
    assert type(add(1.0, 2)) is float


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "int8"])
def test_unannotated_arrays_by_dtype(dtype):
    a = (np.arange(7) % 5).astype(dtype)
    both(scaled_sum, a, 5)
    both(total, a)
    both(total, a.reshape(7, 1))
    assert f"{dtype}[*], int" in scaled_sum.signatures
    assert f"{dtype}[*,*]" in total.signatures


@scriptc.script
def square(x):
    return x * x


def test_scalars_and_arrays_of_several_ranks_in_one_function():
    for arg in (4, 2.5, True, np.arange(3), np.ones((2, 3), np.float32), np.arange(8.0).reshape(2, 2, 2)):
        both(square, arg)
    for sig in ("int", "float", "bool", "int64[*]", "float32[*,*]", "float64[*,*,*]"):
        assert sig in square.signatures


@pytest.mark.parametrize("args", [(True, 1, 2), (False, 1, 2), (1, 2.5, 3.5), (0, np.ones(2), np.zeros(2))])
def test_unannotated_branches(args):
    both(pick, *args)


def test_unannotated_writes_reach_the_caller():
    for a in (np.arange(4.0), np.arange(4, dtype=np.int32), np.ones((2, 2), np.float32)):
        both(bump, a, 2)
    a = np.zeros(3)
    assert bump(a, 1.5) is not None and a.tolist() == [1.5, 1.5, 1.5]


@pytest.mark.parametrize("xs", [[1, 2, 3], [0.5, 1.5], [True, False, True]])
def test_unannotated_lists(xs):
    both(list_sum, xs)
    assert (
        format_signature((ListType({int: INT, float: FLOAT}.get(type(xs[0]), None) or parse_signature("bool")[0]),))
        in list_sum.signatures
    )


def test_unannotated_list_errors():
    with pytest.raises(TypeError, match=r"list_sum\(\) argument 'xs': an empty list has no element type"):
        list_sum([])
    with pytest.raises(
        TypeError,
        match=r"argument 'xs' mixes int and float elements: annotate the parameter "
        r"list\[float\]",
    ):
        list_sum([1, 2.5])


def test_unannotated_rejects_other_objects():
    with pytest.raises(
        TypeError,
        match=r"add\(\) argument 'x' must be int, float, bool, an array, a list or a tuple, "
        r"not str",
    ):
        add("a", 1)


@given(
    st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.booleans()),
    st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.booleans()),
)
@settings(max_examples=60, deadline=None)
def test_unannotated_property(x, y):
    expected = x + y
    assert same_value(expected, add(x, y))
    assert same_value(expected, add.interpret(x, y))


def test_annotation_still_checked_beside_unannotated():
    both(mixed, 3, 2.5)
    both(mixed, True, np.arange(3.0))
    with pytest.raises(TypeError, match=r"mixed\(\) argument 'x' must be int, not float"):
        mixed(1.5, 2)


def test_graph_needs_a_call_first():
    @scriptc.script
    def local(x, y):
        return x * y

    with pytest.raises(GraphNeedsTypes, match="depends on the types passed for its unannotated parameters"):
        local.graph
    assert local(2, 3) == 6
    assert "aten::mul" in str(local.graph)


def test_unannotated_default_values():
    @scriptc.script
    def with_default(x, k=2):
        return x * k

    both(with_default, 3)
    both(with_default, 3.5, 0.5)
    assert with_default.signatures[0] == "int, int"


# -- 2. signatures= -------------------------------------------------------------------------------------------


def test_signatures_compile_at_decoration():
    @scriptc.script(signatures=["float64[*], int", "int32[*], int"])
    def nth(x, n):
        return x[n] * 2

    assert nth.signatures == ["float64[*], int", "int32[*], int"]
    assert len(nth._native) == 2
    a = np.arange(5.0)
    assert nth(a, 3) == 6.0 and nth.interpret(a, 3) == 6.0
    assert nth(np.arange(5, dtype=np.int32), -1) == 8
    assert len(nth._native) == 2  # no compile at the call
    nth(np.arange(5, dtype=np.int64), 1)  # another signature: compiled lazily, listed last
    assert nth.signatures[-1] == "int64[*], int" and len(nth._native) == 3


def test_signatures_with_annotations_and_scalars():
    @scriptc.script(signatures=["float64[*,*]", "float32[*,*]"])
    def trace(m: np.ndarray) -> float:
        s = 0.0
        for i in range(m.shape[0]):
            s += m[i, i]
        return s

    assert trace.signatures == ["float64[*,*]", "float32[*,*]"]
    m = np.arange(9.0).reshape(3, 3)
    assert trace(m) == 12.0 and len(trace._native) == 2

    @scriptc.script(signatures=["int, float", "bool, bool"])
    def two(a, b):
        return a - b

    assert two.signatures == ["int, float", "bool, bool"]
    both(two, 3, 0.5)
    both(two, True, True)
    assert len(two._native) == 2


@pytest.mark.parametrize(
    "sig, message",
    [
        (
            "float64[:], int",
            r"bad signature 'float64\[:\], int': bad type 'float64\[:\]'.*numba's \[:\] is written \[\*\]",
        ),
        ("complex128[*]", r"bad signature 'complex128\[\*\]': bad type 'complex128\[\*\]'"),
        ("float64[*]", r"signature 'float64\[\*\]' gives 1 argument type; nth2\(\) takes 2"),
        ("float, int", r"signature 'float, int': parameter 'x' is annotated int, not float"),
    ],
)
def test_bad_signatures(sig, message):
    with pytest.raises(ValueError, match=message):

        @scriptc.script(signatures=[sig])
        def nth2(x: int, n):
            return x + n


def test_signature_round_trip():
    for text in ["int", "float, bool", "float64[*], int", "int32[*,*,*]", "uint8[]", "list[int]", "list[float32[*]]"]:
        assert format_signature(parse_signature(text)) == text
    assert parse_signature("float64[2,3]") == (TensorType("float64", 2),)
    assert from_numba("float64(float64[:], int64)") == "float64[*], int"
    assert from_numba("void(float32[:,:])") == "float32[*,*]"


# -- 3. numba's signature string as the first argument ---------------------------------------------------------


def test_signature_string_first_is_a_clear_type_error():
    with pytest.raises(TypeError) as e:

        @scriptc.script("float64(float64[:])")
        def f(x):
            return x[0]

    text = str(e.value)
    assert "scriptc.script takes a function, not a signature ('float64(float64[:])')" in text
    assert "@scriptc.script(signatures=['float64[*]'])" in text
    assert "annotate the parameters" in text
    with pytest.raises(TypeError, match=r"signatures=\['float64\[\*\], int', 'int32\[\*\], int'\]"):
        scriptc.script(["float64(float64[:], int64)", "int32(int32[:], int64)"])
    with pytest.raises(TypeError, match=r"signatures=\['float64\[\*\]'\]"):
        scriptc.script("not a signature at all (")


# -- 4. interop: DLPack, the array interface, torch -------------------------------------------------------------


class ArrayInterface:
    """A foreign array exposing only ``__array_interface__`` (a view of a NumPy array)."""

    def __init__(self, a):
        self.a = a

    @property
    def __array_interface__(self):
        return self.a.__array_interface__


class DLPackOnly:
    """A foreign array exposing only DLPack, delegating to a NumPy array."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class BrokenDLPack(DLPackOnly):
    def __dlpack__(self, **kwargs):
        raise BufferError("Can't export tensors on device cuda")


@scriptc.script
def double_in_place(x: np.ndarray) -> float:
    x *= 2
    return x[0]


@pytest.mark.parametrize("wrap", [ArrayInterface, DLPackOnly])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_foreign_arrays_are_viewed_without_copy(wrap, dtype):
    for run in (double_in_place, double_in_place.interpret):
        base = np.arange(1, 5).astype(dtype)
        expected = base * 2
        r = run(wrap(base))
        assert r == expected[0]
        assert np.array_equal(base, expected), "the write must reach the original object"
    for run in (total, total.interpret):  # unannotated: specialised on the dtype and rank of the view
        base = np.arange(6).astype(dtype).reshape(2, 3)
        assert same_value(np.sum(base * base), run(wrap(base)))


def test_foreign_array_results_are_numpy():
    base = np.arange(3.0)
    out = bump(DLPackOnly(base), 1.0)
    assert type(out) is np.ndarray and np.shares_memory(out, base) and base.tolist() == [1.0, 2.0, 3.0]


def test_foreign_array_that_cannot_be_viewed():
    with pytest.raises(
        TypeError,
        match=r"double_in_place\(\) argument 'x': cannot view BrokenDLPack as a NumPy "
        r"array without copying \(BufferError: Can't export",
    ):
        double_in_place(BrokenDLPack(np.zeros(2)))
    with pytest.raises(TypeError, match=r"double_in_place\(\) argument 'x' must be a numpy.ndarray, not list"):
        double_in_place([1.0])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_cpu_tensors_in_and_out(dtype):
    """CPU tensors through DLPack, contiguous and strided: the write reaches the tensor, results are NumPy's."""
    import torch

    t = torch.arange(6, dtype=getattr(torch, dtype)).reshape(2, 3)
    column = t[:, 1]  # a strided view
    out = bump(column, 1.0)
    assert t.tolist() == [[0.0, 2.0, 2.0], [3.0, 5.0, 5.0]]
    assert type(out) is np.ndarray and out.dtype == np.dtype(dtype) and out.tolist() == [2.0, 5.0]
    assert total(t) == total(t.numpy()) == float(np.sum(t.numpy().astype(dtype) ** 2, dtype=dtype))
    assert total.interpret(t) == total(t)


def test_jax_cpu_arrays_are_read_only_inputs():
    """In a child process: JAX starts threads, which later fork tests in this process must not inherit."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import numpy as np, jax.numpy as jnp
        from tests.frontend.test_dispatch import total, double_in_place
        x = jnp.arange(4.0)
        assert total(x) == float(np.sum(np.arange(4.0) ** 2)), total(x)
        try:
            double_in_place(x)
        except ValueError as e:
            print(e)
    """)
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() in ("assignment destination is read-only", "output array is read-only"), run.stdout


def test_gpu_array_check_asks_the_array_not_its_class():
    """torch.Tensor's class declares __cuda_array_interface__ and a CPU tensor raises AttributeError for it:
    the DLPack device decides (a stand-in class with the same behaviour, and torch itself)."""
    import torch
    from scriptc.interop import is_gpu_array

    class CpuTensorLike:
        def __dlpack_device__(self):
            return (1, 0)

        @property
        def __cuda_array_interface__(self):
            raise AttributeError("not on a GPU")

    class GpuTensorLike(CpuTensorLike):
        def __dlpack_device__(self):
            return (2, 0)

    assert not is_gpu_array(CpuTensorLike()) and is_gpu_array(GpuTensorLike())
    assert not is_gpu_array(torch.zeros(2)) and not is_gpu_array(np.zeros(2))


def test_torch_tensors():
    import torch

    t = torch.arange(4, dtype=torch.float64)
    assert double_in_place(t) == 0.0 and t.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert total(t) == float(np.sum(t.numpy() ** 2))
    with pytest.raises(TypeError, match="argument 'x': cannot view Tensor"):
        double_in_place(torch.ones(2, dtype=torch.float64, requires_grad=True))

    @scriptc.script
    def annotated(x: torch.Tensor) -> float:
        return x[1]

    assert annotated(torch.arange(3.0, dtype=torch.float64)) == 1.0


def test_tensor_annotation_resolved_by_name():
    """``torch.Tensor`` in an annotation means an array, found by module and name (torch is never imported)."""
    from scriptc.interop import is_array_class

    Tensor = type("Tensor", (), {"__module__": "torch"})
    NotTensor = type("Tensor", (), {"__module__": "mylib"})
    assert is_array_class(Tensor) and not is_array_class(NotTensor) and not is_array_class(np.ndarray)


# -- callers and the command line --------------------------------------------------------------------------------


@scriptc.script
def norm_of(x: np.ndarray, p: int) -> float:
    return total(x) ** (1.0 / p) + add(p, 0.5)


def test_scripted_caller_specialises_an_unannotated_callee():
    both(norm_of, np.arange(4.0), 2)
    both(norm_of, np.arange(6, dtype=np.int32).reshape(2, 3), 3)


def test_cli_dump_of_unannotated_function(tmp_path, capsys):
    from scriptc.cli import main

    path = tmp_path / "unannotated_kernel.py"
    path.write_text("def f(x, n):\n    return x[n] * 2\n")
    assert main(["dump", f"{path}:f"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "depends on the types of its unannotated parameters: pass --types" in err
    assert main(["dump", f"{path}:f", "--types", "float32[*]", "int"]) == 0
    out = capsys.readouterr().out
    assert "%x : Float(*)" in out and "%n : int" in out and "aten::mul" in out


def test_numpy_scalars_are_not_arrays():
    with pytest.raises(TypeError, match=r"double_in_place\(\) argument 'x' must be a numpy.ndarray, not float64"):
        double_in_place(np.float64(1.0))
    for runner in (add, add.interpret):  # taken as the Python scalars they convert to (docs/language.md)
        got = runner(np.float32(0.5), np.int8(3))
        assert type(got) is float and got == add.py_func(np.float32(0.5), np.int8(3))


def threaded_first_calls(x):
    y = x * 2.0 + 1.0
    for _ in range(3):
        y = np.tanh(y) + np.sum(y, axis=0)
    return np.mean(y)


def test_threads_first_calling_one_signature_compile_it_once():
    """The frontend's state is the compile's: threads first-calling one signature at once got an internal
    KeyError from another's compile; now they wait for it, and the signature is compiled once."""
    import threading

    f = scriptc.script(threaded_first_calls)
    x = np.ones((4, 3))
    barrier, results, errors = threading.Barrier(6), [], []

    def call():
        barrier.wait()
        try:
            results.append(f(x))
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(e))

    run_threads_interleaved([threading.Thread(target=call) for _ in range(6)], 1e-5)
    assert errors == [] and results == [threaded_first_calls(x)] * 6
    assert len(f._native) == 1
