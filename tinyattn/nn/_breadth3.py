"""The third nn breadth additions, gathered for one import in ``functional.py``: bilinear,
embedding_bag, affine_grid / grid_sample, the 3-D convolutions and pdist."""

from ._bilinear import bilinear
from ._conv import conv3d
from ._conv_transpose import conv_transpose3d
from ._embedding_bag import embedding_bag
from ._grid_sample import affine_grid, grid_sample
from ._pdist import pdist

__all__ = [
    "bilinear",
    "embedding_bag",
    "affine_grid",
    "grid_sample",
    "conv3d",
    "conv_transpose3d",
    "pdist",
]
