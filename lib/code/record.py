"""A value object without ``dataclasses``: importing that module (it pulls ``inspect``, ``ast``
and ``dis``) costs a cold ``ctxctl`` call more than its whole parse, so the classes on the
outline/symbol/read/deps path derive from :class:`Record` instead.
"""
from __future__ import annotations


class Record:
    """Fields are declared as ``FIELDS = (("name", default), …)``; a default that is a class
    is a factory (called per instance). Keyword construction, ``==`` over the fields,
    ``repr``, :meth:`replace` and :meth:`field_names` — the parts of dataclasses ctxctl uses."""

    FIELDS = ()

    def __init__(self, *args, **kwargs):
        names = self.FIELDS
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional arguments")
        for (name, default), value in zip(names, args):
            kwargs[name] = value
        for name, default in names:
            if name in kwargs:
                value = kwargs.pop(name)
            else:
                value = default() if isinstance(default, type) else default
            object.__setattr__(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected fields {sorted(kwargs)}")

    @classmethod
    def field_names(cls) -> tuple:
        """The declared field names, in order."""
        return tuple(name for name, _ in cls.FIELDS)

    def replace(self, **changes):
        """A copy with ``changes`` applied."""
        values = {name: getattr(self, name) for name, _ in self.FIELDS}
        values.update(changes)
        return type(self)(**values)

    def __eq__(self, other):
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n, _ in self.FIELDS)

    def __hash__(self):
        return hash(tuple(getattr(self, n) for n, _ in self.FIELDS))

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self.FIELDS)
        return f"{type(self).__name__}({inner})"
