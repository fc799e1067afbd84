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
    shape_composites,
    sorting,
    stats,
    unary,
    views,
)
from . import (
    factories,
    index_writes,
    integer_math,
    linalg_helpers,
    numeric,
    strided,
    windows,
)
