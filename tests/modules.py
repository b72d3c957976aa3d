"""Write source text to a real module so that scriptc can read the function's source."""

from __future__ import annotations

import importlib.util
import itertools
import textwrap

_counter = itertools.count()

HEADER = "import math\nimport numpy as np\nimport scriptc\n"


def load_module(tmp_path, source: str):
    """Import ``source`` (dedented, after HEADER's three import lines) as a fresh module."""
    name = f"mod_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
