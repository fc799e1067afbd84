"""The third nn breadth additions, gathered for one import in ``functional.py``: bilinear,
embedding_bag, affine_grid / grid_sample and the 3-D convolutions."""

from ._bilinear import bilinear

__all__ = ["bilinear"]
