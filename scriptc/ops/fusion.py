"""``prim::FusionGroup``: a group of element-wise operators (possibly ending in a full reduction) evaluated
as one loop, made by the fusion pass. Its ``subgraph`` attribute holds the operators; the interpreter runs the
subgraph, backends lower it to one loop nest. ``reuse=k`` (set by the buffer-reuse pass) lets the result be
written into input ``k`` when nothing else references that buffer at run time."""
from ..ir.registry import Effect, register

register("prim::FusionGroup(Any... inputs, *, Graph subgraph, int? reuse) -> Any", effect=Effect.RAISES,
         structural=True, infer=lambda *types, subgraph, reuse=None: [v.type for v in subgraph.outputs])
