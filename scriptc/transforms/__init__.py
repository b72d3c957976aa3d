"""Function transforms on the IR: reverse-mode ``grad`` and ``value_and_grad``."""
from .api import GradFunction, grad, value_and_grad
from .vmap_api import VmapFunction   # scriptc.vmap is vmap_api.vmap (scriptc.transforms.vmap is the transform)

__all__ = ["GradFunction", "grad", "value_and_grad"]
__all__ += ["VmapFunction"]
