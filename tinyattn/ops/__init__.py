"""The differentiable ops, one module per concept (each op: forward and backward together)."""

from . import (  # noqa: F401
    activation,
    creation,
    elementwise,
    indexing,
    inplace,
    linalg,
    reduction,
    shape,
)
