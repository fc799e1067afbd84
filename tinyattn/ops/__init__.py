"""The differentiable ops, one module per concept (each op: forward and backward together)."""

from . import (
    activation,
    arithmetic,
    compare,
    creation,
    cumulative,
    fill,
    indexing,
    inplace,
    linalg,
    products,
    rearrange,
    reduction,
    scatter,
    shape_more,
    sorting,
    stats,
    unary,
    views,
)
from . import creation_more, integer_math, linalg_helpers, windows  # math ops breadth
