"""What generated code runs on and how it reaches the process, knowing no operator of the IR: the JIT engine and
the object loader, symbols, the tiers and the on-disk cache, CPython entry points, the thread pool, BLAS, and the
LLVM IR text builder that the lowering (``../lowering``) and the runtime's own code generators write with.

Nothing here imports ``lowering/``; importing this package loads nothing."""
