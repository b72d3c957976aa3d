"""The kernel of ``dask_blocks.py``, in a module of its own: worker processes import it by name when they
unpickle the function (scripted functions pickle by reference, as plain functions do)."""

import numpy as np

import scriptc


@scriptc.script(nogil=True, cache=True)
def logistic_orbit(x: np.ndarray, r: float, steps: int) -> np.ndarray:
    """Iterate the logistic map ``v -> r v (1 - v)`` ``steps`` times from every element of a 2-D block."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            for _ in range(steps):
                v = r * v * (1.0 - v)
            out[i, j] = v
    return out


def logistic_orbit_numpy(x: np.ndarray, r: float, steps: int) -> np.ndarray:
    """The same, element-wise with NumPy (the same float operations in the same order: identical bits)."""
    v = x.copy()
    for _ in range(steps):
        v = r * v * (1.0 - v)
    return v
