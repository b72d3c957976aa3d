"""IR graphs to LLVM IR: the lowering core (``lower.py``: values, blocks, control flow, calls, unwinding, loop
nests), which knows no operator, and each operator's lowering rule, by domain, registered against its ``OpDef``
(``rules.py``). ``docs/internals/adding-an-operator.md`` shows where a new operator's rule goes."""
