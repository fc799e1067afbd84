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
from . import integer_math, linalg_helpers  # math ops breadth
