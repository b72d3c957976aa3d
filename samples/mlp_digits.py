"""Article 002's MLP (PyTorch to JAX/flax), trained with scriptc: Dense 128 -> ReLU -> Dense 256 -> ReLU -> Dense 10
-> log-softmax, cross-entropy, Adam (lr 1e-3), mini-batches of 32, on scikit-learn's bundled digits (8x8 images,
1,797 samples, no download), or on MNIST when given the directory of its IDX files.

The train step is one compiled function: ``scriptc.value_and_grad`` of the loss and the Adam update of a
NamedTuple train state (parameters and both moment estimates), as flax's ``TrainState`` holds them. Batches are
drawn with ``scriptc.random`` keys, split once per epoch.

    python samples/mlp_digits.py [--epochs N] [--mnist DIR]
"""

from __future__ import annotations

import argparse
import gzip
import os
import struct
import sys
import time
from typing import NamedTuple

import numpy as np

import scriptc


class Dense(NamedTuple):
    w: np.ndarray
    b: np.ndarray


class Params(NamedTuple):
    l1: Dense
    l2: Dense
    l3: Dense


class TrainState(NamedTuple):
    step: int
    params: Params
    m: Params  # Adam's first moment estimates, one per parameter
    v: Params  # and second


@scriptc.script
def dense(p: Dense, x: np.ndarray) -> np.ndarray:
    return x @ p.w + p.b


@scriptc.script
def log_probabilities(p: Params, x: np.ndarray) -> np.ndarray:
    h = np.maximum(dense(p.l1, x), 0.0)
    h = np.maximum(dense(p.l2, h), 0.0)
    logits = dense(p.l3, h)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


@scriptc.script
def loss(p: Params, x: np.ndarray, onehot: np.ndarray) -> float:
    return -np.mean(np.sum(log_probabilities(p, x) * onehot, axis=1))


@scriptc.script
def adam(
    p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * (g * g)
    m_hat = m / (1.0 - 0.9**t)
    v_hat = v / (1.0 - 0.999**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + 1e-8), m, v


@scriptc.script
def adam_dense(p: Dense, g: Dense, m: Dense, v: Dense, t: int, lr: float) -> tuple[Dense, Dense, Dense]:
    w, mw, vw = adam(p.w, g.w, m.w, v.w, t, lr)
    b, mb, vb = adam(p.b, g.b, m.b, v.b, t, lr)
    return Dense(w, b), Dense(mw, mb), Dense(vw, vb)


@scriptc.script
def train_step(s: TrainState, x: np.ndarray, onehot: np.ndarray, lr: float) -> tuple[TrainState, float]:
    value, g = scriptc.value_and_grad(loss)(s.params, x, onehot)
    t = s.step + 1
    p1, m1, v1 = adam_dense(s.params.l1, g.l1, s.m.l1, s.v.l1, t, lr)
    p2, m2, v2 = adam_dense(s.params.l2, g.l2, s.m.l2, s.v.l2, t, lr)
    p3, m3, v3 = adam_dense(s.params.l3, g.l3, s.m.l3, s.v.l3, t, lr)
    return TrainState(t, Params(p1, p2, p3), Params(m1, m2, m3), Params(v1, v2, v3)), value


@scriptc.script
def evaluate(p: Params, x: np.ndarray, labels: np.ndarray, onehot: np.ndarray) -> tuple[float, float]:
    logp = log_probabilities(p, x)
    correct = np.argmax(logp, axis=1) == labels
    return -np.mean(np.sum(logp * onehot, axis=1)), np.mean(correct)


@scriptc.script
def init_dense(key: np.ndarray, n_in: int, n_out: int) -> Dense:
    scale = np.sqrt(2.0 / n_in)  # He initialisation, for ReLU layers
    return Dense(scriptc.random.normal(key, (n_in, n_out)) * scale, np.zeros(n_out))


def init_state(key: np.ndarray, sizes: list[int]) -> TrainState:
    keys = scriptc.random.split(key, 3)
    layers = [init_dense(keys[k], sizes[k], sizes[k + 1]) for k in range(3)]
    zeros = Params(*[Dense(np.zeros_like(d.w), np.zeros_like(d.b)) for d in layers])
    return TrainState(0, Params(*layers), zeros, zeros)


# -- data ------------------------------------------------------------------------------------------------------
def read_idx(path: str) -> np.ndarray:
    """An IDX file (MNIST's format, optionally gzipped): magic 0x0000 <type> <ndim>, big-endian dimensions, data."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    types = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if zero != 0 or kind not in types:
        raise ValueError(f"{path}: not an IDX file (magic {data[:4].hex()})")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    body = np.frombuffer(data, dtype=types[kind], offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {body.size} values for shape {shape}")
    return body.reshape(shape).astype(types[kind].replace(">", "="))


def mnist(directory: str):
    def find(stem):
        for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
            if os.path.exists(os.path.join(directory, name)):
                return os.path.join(directory, name)
        raise FileNotFoundError(f"no {stem}[.gz] in {directory}")

    train_images, test_images = read_idx(find("train-images-idx3-ubyte")), read_idx(find("t10k-images-idx3-ubyte"))
    x_train = train_images.reshape(len(train_images), -1) / 255.0  # 28 x 28 -> 784 pixels
    x_test = test_images.reshape(len(test_images), -1) / 255.0
    return (
        x_train,
        read_idx(find("train-labels-idx1-ubyte")).astype(np.int64),
        x_test,
        read_idx(find("t10k-labels-idx1-ubyte")).astype(np.int64),
    )


def digits(seed: int = 0, n: int | None = None):
    from sklearn.datasets import load_digits

    data = load_digits()
    x, y = data.data / 16.0, data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))[:n]
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


# -- training --------------------------------------------------------------------------------------------------
def progress(epoch: int, epochs: int, done: int, total: int, out=sys.stderr) -> None:
    width = 30
    filled = width * done // total
    out.write(f"\repoch {epoch}/{epochs} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    out.flush()


def train(
    x_train,
    y_train,
    x_test,
    y_test,
    epochs: int = 10,
    batch: int = 32,
    lr: float = 1e-3,
    seed: int = 0,
    show_progress: bool = True,
) -> list[tuple[float, float, float]]:
    classes = 10
    onehot_train, onehot_test = np.eye(classes)[y_train], np.eye(classes)[y_test]
    key = scriptc.random.key(seed)
    key, init_key = scriptc.random.split(key)
    state = init_state(init_key, [x_train.shape[1], 128, 256, classes])
    steps = len(x_train) // batch
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        key, shuffle_key = scriptc.random.split(key)
        order = scriptc.random.permutation(shuffle_key, len(x_train))
        total = 0.0
        for k in range(steps):
            idx = order[k * batch : (k + 1) * batch]
            state, value = train_step(state, x_train[idx], onehot_train[idx], lr)
            total += value
            if show_progress and (k % 10 == 0 or k == steps - 1):
                progress(epoch, epochs, k + 1, steps)
        elapsed = time.perf_counter() - start
        test_loss, accuracy = evaluate(state.params, x_test, y_test, onehot_test)
        if show_progress:
            sys.stderr.write("\r" + " " * 60 + "\r")
        print(
            f"epoch {epoch:2d}  train_loss: {total / steps:.3f}  test_loss: {test_loss:.3f}  "
            f"test_acc: {accuracy:.3f}  elapsed: {elapsed:.2f} s",
            flush=True,
        )
        history.append((total / steps, test_loss, accuracy))
    return history


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--mnist", metavar="DIR", help="train on MNIST's IDX files in DIR instead of digits")
    args = parser.parse_args(argv)
    data = mnist(args.mnist) if args.mnist else digits()
    name = "MNIST" if args.mnist else "scikit-learn digits"
    print(f"{name}: {len(data[0])} training and {len(data[2])} test images of {data[0].shape[1]} pixels")
    train(*data, epochs=args.epochs)


if __name__ == "__main__":
    main()
