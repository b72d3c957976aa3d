"""Control flow demo: nested loops with break and an early return.

Run with:  python samples/control_flow.py
"""

import numpy as np

import scriptc


@scriptc.script
def first_pair_above(x: np.ndarray, threshold: float) -> int:
    # index i*n+j of the first pair (i < j) with x[i] + x[j] > threshold,
    # skipping negative x[i] and stopping a row at the first negative x[j];
    # -1 if there is none
    n = len(x)
    checked = 0
    for i in range(n):
        if x[i] < 0.0:
            continue
        for j in range(i + 1, n):
            checked += 1
            if x[j] < 0.0:
                break
            if x[i] + x[j] > threshold:
                print("found after", checked, "checks:", i, j)
                return i * n + j
    print("none found after", checked, "checks")
    return -1


if __name__ == "__main__":
    x = np.random.default_rng(1).standard_normal(8)
    print(first_pair_above(x, 1.3))
    print(first_pair_above(x, 10.0))
    print(first_pair_above.graph)
