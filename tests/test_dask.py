"""samples/dask_blocks.py at small size: a nogil, cached scriptc kernel under dask's threaded scheduler and on a
distributed.LocalCluster of worker processes (which unpickle the kernel by reference and load its machine code
from the on-disk cache), each checked against NumPy."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
sys.path.insert(0, str(SAMPLES))
import dask_blocks  # noqa: E402
from dask_kernels import logistic_orbit_numpy  # noqa: E402


def test_threaded_scheduler_matches_numpy():
    x, result, _ = dask_blocks.threaded(300, 100, 2)
    assert np.array_equal(result, logistic_orbit_numpy(x, dask_blocks.R, dask_blocks.STEPS))


def test_local_cluster_matches_numpy():
    pytest.importorskip("distributed")
    x, result, _ = dask_blocks.on_cluster(200, 100, 2)
    assert np.array_equal(result, logistic_orbit_numpy(x, dask_blocks.R, dask_blocks.STEPS))
