"""``@record``: a class of values made from its annotated fields, as ``@dataclass`` makes one (``__init__`` with
defaults and ``field(default_factory=...)``, ``__post_init__``, ``__eq__`` on the fields, ``__repr__``, and with
``frozen=True`` immutability and ``__hash__``), for the classes ``import scriptc`` defines.

Why not dataclasses: they generate each method as source text and compile it with ``exec``, about a millisecond
per class, which was a fifth of ``import scriptc``. These methods are shared closures; a class whose instances
are made in hot loops (``TensorType``, ``SourceRange``) writes its own ``__init__`` and keeps the rest.
"""

from __future__ import annotations

from operator import attrgetter

_MISSING = object()


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def field(*, default_factory):
    """A field whose default is made per instance: ``field(default_factory=list)``."""
    return _Factory(default_factory)


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record."""


def record(cls=None, *, frozen: bool = False):
    """Make ``cls`` a record (see the module docstring); ``@record`` or ``@record(frozen=True)``."""
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


def _make(cls, frozen: bool):
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = {}
    for n in names:
        if n in cls.__dict__:
            defaults[n] = cls.__dict__[n]
            if isinstance(defaults[n], _Factory):
                delattr(cls, n)
    cls.__record_fields__ = names
    if len(names) > 1:
        key = attrgetter(*names)
    elif names:
        one = attrgetter(names[0])

        def key(obj):
            return (one(obj),)
    else:

        def key(obj):
            return ()

    if "__init__" not in cls.__dict__:
        cls.__init__ = _initializer(cls, names, defaults, frozen)

    def __eq__(self, other):
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    def __repr__(self):
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    cls.__eq__ = __eq__
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = __repr__
    if frozen:

        def __hash__(self):
            return hash(key(self))

        def __setattr__(self, name, value):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        cls.__hash__, cls.__setattr__, cls.__delattr__ = __hash__, __setattr__, __delattr__
    else:
        cls.__hash__ = None  # mutable and compared by value: unhashable, as a dataclass is
    return cls


def _initializer(cls, names: tuple, defaults: dict, frozen: bool):
    index = {n: k for k, n in enumerate(names)}
    post_init = getattr(cls, "__post_init__", None)
    setter = object.__setattr__

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments ({len(args)} given)")
        values = list(args) + [_MISSING] * (len(names) - len(args))
        for k, v in kwargs.items():
            at = index.get(k)
            if at is None or values[at] is not _MISSING:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated argument {k!r}")
            values[at] = v
        for n, v in zip(names, values):
            if v is _MISSING:
                if n not in defaults:
                    raise TypeError(f"{cls.__name__}() missing argument {n!r}")
                v = defaults[n]
                if isinstance(v, _Factory):
                    v = v.make()
            setter(self, n, v)
        if post_init is not None:
            self.__post_init__()

    return __init__
