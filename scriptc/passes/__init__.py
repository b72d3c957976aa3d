"""Graph-to-graph passes, one per module, registered by name in ``manager.PASSES``.

Every pass keeps the graph verifiable and keeps what the reference interpreter computes unchanged: the
interpreter run on the graph before and after a pass is the test of the pass."""

from .. import ops  # noqa: F401  (declares the operators this package finds in the registry)
from .manager import DEFAULT_PIPELINE, PASSES, Pass, PassManager, register  # noqa: F401

# each pass module registers its pass (manager.register)
from . import bounds_check, buffer_reuse, canonicalize, constant_propagation, cse, dce  # noqa: F401
from . import dead_loop_carried, fusion, inline, licm, shape_inference  # noqa: F401
from . import time_loop_fusion, unroll, unswitch  # noqa: F401
