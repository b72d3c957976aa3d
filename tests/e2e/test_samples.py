"""The seed articles' programs in samples/, each run at a small size: linear regression by gradient descent (001),
the digits MLP with Adam on a NamedTuple train state (002), keys and train state outside the model (003); and
the MNIST IDX reader on a small file written here."""

from __future__ import annotations

import gzip
import importlib.util
import os
import struct
import sys

import numpy as np
import pytest

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "samples")


def load(name: str):
    if SAMPLES not in sys.path:
        sys.path.insert(0, SAMPLES)
    spec = importlib.util.spec_from_file_location(name, os.path.join(SAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_linreg_grad_fits_the_line_as_the_hand_written_loop_does(capsys):
    linreg = load("linreg_grad")
    x, y = linreg.create_dataset(3.0, 2.0, 200, seed=1)
    p = linreg.train(linreg.Params(1.0, 0.0), x, y, 1e-2, 3000)
    a, b = linreg.train_by_hand(1.0, 0.0, x, y, 1e-2, 3000)
    assert p.a == pytest.approx(a, rel=1e-12) and p.b == pytest.approx(b, rel=1e-12)
    fit_a, fit_b = np.polyfit(x, y, 1)
    assert abs(p.a - fit_a) < 0.2 and abs(p.b - fit_b) < 0.1  # on its way to the least-squares line
    linreg.main(100, 500)
    out = capsys.readouterr().out
    assert "scriptc.grad in a compiled loop" in out and "derivative written by hand" in out


def test_mlp_digits_learns(capsys):
    pytest.importorskip("sklearn")
    mlp = load("mlp_digits")
    x_train, y_train, x_test, y_test = mlp.digits(n=600)
    history = mlp.train(x_train, y_train, x_test, y_test, epochs=3, show_progress=False)
    out = capsys.readouterr().out
    assert out.count("test_acc") == 3
    losses = [h[0] for h in history]
    assert losses[2] < losses[0] and history[-1][2] >= 0.85  # 3 epochs on 480 images
    # the compiled step is the same computation as its interpreted graph
    state = mlp.init_state(mlp.scriptc.random.key(1), [64, 128, 256, 10])
    onehot = np.eye(10)[y_train[:8]]
    native, value = mlp.train_step(state, x_train[:8], onehot, 1e-3)
    interpreted, value2 = mlp.train_step.interpret(state, x_train[:8], onehot, 1e-3)
    assert value == pytest.approx(value2, rel=1e-12)
    np.testing.assert_allclose(native.params.l3.w, interpreted.params.l3.w, rtol=1e-10, atol=1e-12)


def _write_idx(path, array, gz=False):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float64): 0x0E}
    header = struct.pack(">HBB", 0, codes[array.dtype], array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(data)


def test_idx_reader(tmp_path):
    mlp = load("mlp_digits")
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx(tmp_path / "train-images-idx3-ubyte", images)
    np.testing.assert_array_equal(mlp.read_idx(str(tmp_path / "train-images-idx3-ubyte")), images)
    values = np.array([[1.5, -2.0], [3.25, 0.0]])
    _write_idx(tmp_path / "v.idx.gz", values, gz=True)
    got = mlp.read_idx(str(tmp_path / "v.idx.gz"))
    assert got.dtype == np.float64 and got.dtype.isnative
    np.testing.assert_array_equal(got, values)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        mlp.read_idx(str(tmp_path / "bad"))
    labels = np.array([3, 1, 4], dtype=np.uint8)
    for stem, array in (
        ("train-labels-idx1-ubyte", labels),
        ("t10k-images-idx3-ubyte", images),
        ("t10k-labels-idx1-ubyte", labels[:2]),
    ):
        _write_idx(tmp_path / stem, array)
    x_train, y_train, x_test, y_test = mlp.mnist(str(tmp_path))
    assert x_train.shape == (2, 12) and x_train.max() == pytest.approx(23 / 255)
    np.testing.assert_array_equal(y_train, labels)


def test_train_state_runs_are_reproducible(capsys):
    sample = load("train_state")
    first = sample.run(7, 60, 20)
    second = sample.run(7, 60, 20)
    assert first == second and len(first) == 4
    other = sample.run(8, 60, 20)
    assert other != first  # another seed, other numbers
    losses = [float(line.split("loss without dropout")[1]) for line in first[:-1]]
    assert losses[-1] < losses[0]


def test_functorch_basics_checks_its_results(capsys):
    load("functorch_basics").main()
    out = capsys.readouterr().out
    assert out.count("True") == 3 and "False" not in out, out
    assert "per-sample gradients, shape (3, 5)" in out
