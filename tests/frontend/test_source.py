"""Finding a function's source from its code object's line table (frontend/source.py) instead of tokenizing the
file: the same lines as inspect.getsourcelines, or None where that is not certain (inspect then decides)."""

import ast
import inspect
import textwrap

import pytest

from scriptc.frontend.source import _lines_from_code, get_source

CASES = '''
import functools

def plain(x):
    return x + 1

@functools.lru_cache
@functools.lru_cache
def decorated(x):
    y = x * 2
    return y   # a comment

    # more comments, then a blank line

def multi_line(x):
    return max(x,
               3,
)

def nested(x):
    def inner(y):
        return y * 2
    return inner

def ends_with_nested(x):
    z = x
    def inner(y):
        return (y *
                z)

def continued(x):
    return x + \\
        1

def docstring_only():
    """Only a docstring."""

def trailing_pass(x):
    if x:
        x = 1
    else:
        pass

class Holder:
    def method(self, x):
        return x
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "cases.py"
    path.write_text(textwrap.dedent(CASES))
    namespace = {"__name__": "cases"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return path, namespace


@pytest.mark.parametrize(
    "name",
    [
        "plain",
        "decorated",
        "multi_line",
        "nested",
        "ends_with_nested",
        "continued",
        "docstring_only",
        "trailing_pass",
        "Holder.method",
    ],
)
def test_same_lines_as_inspect_or_none(module, name):
    path, namespace = module
    obj = namespace[name.split(".")[0]]
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    func = inspect.unwrap(obj)
    found = _lines_from_code(func, str(path))
    if found is not None:  # the same definition at the same place (trailing comments may be left out)
        lines, start = inspect.getsourcelines(func)
        assert found[1] == start and found[0] == lines[: len(found[0])]
        parse = lambda block: ast.dump(ast.parse(textwrap.dedent("".join(block))), include_attributes=True)  # noqa: E731
        assert parse(found[0]) == parse(lines)
    assert get_source(func).tree.name == func.__name__
