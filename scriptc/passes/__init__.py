"""Graph-to-graph passes (constant propagation, DCE, CSE, LICM, unrolling, inlining, shape inference, fusion)."""
