"""``Size``: the type of ``tensor.shape``, as in torch."""

from __future__ import annotations


class Size(tuple):
    """A tensor's shape: a tuple (sliceable, unpackable) with torch's ``numel``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        result = tuple.__getitem__(self, item)
        return Size(result) if isinstance(item, slice) else result

    def __repr__(self) -> str:
        return f"tinyattn.Size({list(self)})"
