"""Constructor argument checks shared by the layers: reject at construction what torch rejects.

Torch's layers reject a float or negative size when they allocate their weights
(``TypeError`` for the type, ``RuntimeError`` for a negative size); tinyattn's
allocator would round a float, so every size is checked here first, with a message
naming the layer and the argument. Bools and NumPy integers pass, as in torch.
"""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name


def int_arg(layer: str, name: str, value) -> int:
    """``value`` as an int; ``TypeError`` naming ``layer.name`` if it is not an integer."""
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{layer}: {name} must be an int, got {type_name(value)} ({value!r})")
    return int(value)


def size_arg(layer: str, name: str, value, minimum: int = 0, error: type = RuntimeError) -> int:
    """An integer size ``>= minimum`` (torch: RuntimeError for a negative dimension)."""
    size = int_arg(layer, name, value)
    if size < minimum:
        what = "negative" if minimum == 0 else f"smaller than {minimum}"
        raise error(f"{layer}: {name}={size} is {what}; it must be an int >= {minimum}")
    return size
