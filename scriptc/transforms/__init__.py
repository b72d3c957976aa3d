"""Function transforms on the IR: reverse mode (autodiff.py) and batching (vmap.py). The callables users get,
``scriptc.grad``/``value_and_grad`` (api.py) and ``scriptc.vmap`` (vmap_api.py), sit a layer above: they compile."""

from .. import ops  # noqa: F401  (declares the operators this package finds in the registry)
