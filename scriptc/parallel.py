"""``scriptc.prange``: the iterable of a loop whose iterations are independent.

In a scripted function, ``for i in scriptc.prange(...)`` compiles to a parallel loop (README, "Parallel loops"):
its iterations may run in any order and at once, on the threads of scriptc's pool. Called from plain Python
(or run by the interpreter) it is ``range``, which is the reference semantics.
"""

from __future__ import annotations


def prange(*args) -> range:
    """``range(*args)`` whose iterations may run in any order and at once in a scripted function."""
    return range(*args)
