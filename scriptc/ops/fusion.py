"""``prim::FusionGroup``: a group of element-wise operators (possibly ending in a full reduction) evaluated
as one loop, made by the fusion pass. Its ``subgraph`` attribute holds the operators; the interpreter runs the
subgraph, backends lower it to one loop nest. ``reuse=k`` (set by the buffer-reuse pass) lets the result be
written into input ``k`` when nothing else references that buffer at run time."""

import numpy as np

from ..ir.registry import Batch, Effect, register
from ..ir.types import BOOL, TensorType

# vmap batches the frontend's graph, before the pass pipeline makes these operators.
_MADE_LATER = Batch.unbatchable("made by the pass pipeline, which runs after vmap")

register(
    "prim::FusionGroup(Any... inputs, *, Graph subgraph, int? reuse) -> Any",
    effect=Effect.RAISES,
    batch=_MADE_LATER,
    structural=True,
    infer=lambda *types, subgraph, reuse=None: [v.type for v in subgraph.outputs],
)


# ``prim::FusedLoop``: a counted loop of element-wise updates of loop-carried arrays (and scalars), made by the
# time-loop-fusion pass. Inputs: (trips, carried initial arrays..., loop-invariant operands...); ``subgraph``
# maps (iteration, carried..., invariants...) to the next carried values. It means exactly
# ``for i in range(trips): carried = subgraph(i, *carried, *invariants)`` (zero trips return the initial
# arrays themselves); backends run the element loop outside and the time loop inside.
def _fused_loop_shapes(types, consts, *, subgraph, carried):
    return [types[1 + k].shape if isinstance(types[1 + k], TensorType) else None for k in range(carried)]


register(
    "prim::FusedLoop(Any... inputs, *, Graph subgraph, int carried) -> Any",
    effect=Effect.RAISES,
    batch=_MADE_LATER,
    structural=True,
    infer=lambda *types, subgraph, carried: [v.type for v in subgraph.outputs],
    shape=_fused_loop_shapes,
)


def _shapes_fit(*arrays, carried):
    """The first ``carried`` arrays share one shape S, and every other array broadcasts into S unchanged."""
    shape = np.shape(arrays[0])
    if any(np.shape(a) != shape for a in arrays[1:carried]):
        return False
    for a in arrays[carried:]:
        s = np.shape(a)
        if len(s) > len(shape) or any(d not in (1, e) for d, e in zip(s[::-1], shape[::-1])):
            return False
    return True


register(
    "prim::ShapesFit(Tensor... arrays, *, int carried) -> bool",
    impl=_shapes_fit,
    batch=_MADE_LATER,
    infer=lambda *types, carried: BOOL,
)
