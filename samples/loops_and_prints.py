"""The main scriptc demo: a loop that squares an array and prints it.

Run with:  python samples/loops_and_prints.py
"""

import numpy as np

import scriptc


@scriptc.script
def f(x: np.ndarray) -> np.ndarray:
    for _ in range(3):
        x = x * x
        print(x)
    return x


if __name__ == "__main__":
    x = np.random.default_rng(0).random((2, 3))
    f(x)
    print(f.graph)
