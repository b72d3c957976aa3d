"""Code generation: llvm/ (the CPU, its runtime and the JIT), nvptx/ (NVIDIA GPUs), export/ (C libraries), and
the analyses they share (ownership of references, arguments a function writes, whether it may release the GIL)."""

from .. import ops  # noqa: F401  (declares the operators this package finds in the registry)
