"""``prim::FusionGroup``: a group of element-wise operators (possibly ending in a full reduction) evaluated
as one loop, made by the fusion pass. Its ``subgraph`` attribute holds the operators; the interpreter runs the
subgraph, backends lower it to one loop nest."""
from ..ir.registry import Effect, register

register("prim::FusionGroup(Any... inputs, *, Graph subgraph) -> Any", effect=Effect.RAISES, structural=True,
         infer=lambda *types, subgraph: [v.type for v in subgraph.outputs])
