"""Fit y = a*x + b by full-batch gradient descent with explicit loops.

10,000 epochs over 1,000 points (10 million inner-loop iterations).

Run with:  python samples/linear_regression.py
"""

import numpy as np

import scriptc

TRUE_A = 3.0
TRUE_B = -2.0


@scriptc.script
def fit(x: np.ndarray, y: np.ndarray, epochs: int, lr: float):
    n = len(x)
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        ga = 0.0
        gb = 0.0
        for i in range(n):
            err = a * x[i] + b - y[i]
            ga += err * x[i]
            gb += err
        a -= lr * 2.0 * ga / n
        b -= lr * 2.0 * gb / n
    return a, b


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.random(1000)
    y = TRUE_A * x + TRUE_B + 0.1 * rng.standard_normal(1000)
    a, b = fit(x, y, 10_000, 0.1)
    print(f"fitted: a = {a:.6f}, b = {b:.6f}")
    print(f"true:   a = {TRUE_A:.6f}, b = {TRUE_B:.6f}")
