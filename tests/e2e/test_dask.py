"""samples/dask_blocks.py at small size: a nogil, cached scriptc kernel under dask's threaded scheduler and on a
distributed.LocalCluster of worker processes (which unpickle the kernel by reference and load its machine code
from the on-disk cache), each checked against NumPy; and blocks sent from the client (``da.from_array``), which
reach the workers at unaligned addresses."""

import sys
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
sys.path.insert(0, str(SAMPLES))
import dask_blocks  # noqa: E402
from dask_kernels import logistic_orbit_numpy  # noqa: E402


def test_threaded_scheduler_matches_numpy():
    x, result, _ = dask_blocks.threaded(300, 100, 2)
    assert np.array_equal(result, logistic_orbit_numpy(x, dask_blocks.R, dask_blocks.STEPS))


def test_local_cluster_matches_numpy():
    x, result, _ = dask_blocks.on_cluster(200, 100, 2)
    assert np.array_equal(result, logistic_orbit_numpy(x, dask_blocks.R, dask_blocks.STEPS))


def aligned(block: np.ndarray) -> np.ndarray:
    return np.array([[block.flags.aligned]])


def test_blocks_sent_from_the_client_match_numpy():
    import dask.array as da
    from distributed import Client, LocalCluster
    from dask_kernels import logistic_orbit

    x = np.random.default_rng(0).uniform(0.1, 0.9, (300, 300))
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        blocks = da.from_array(x, chunks=(100, 100))
        flags = client.compute(blocks.map_blocks(aligned, dtype=bool, chunks=(1, 1))).result()
        result = client.compute(blocks.map_blocks(logistic_orbit, 3.7, 50, dtype=np.float64)).result()
    assert not flags.all(), "every block arrived aligned: this test no longer sees the unaligned case"
    assert np.array_equal(result, logistic_orbit_numpy(x, 3.7, 50))
