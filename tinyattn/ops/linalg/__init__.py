"""Linear algebra: matmul and its family, matrix products, matrix functions and decompositions, LU, torch.linalg's functions (api.py) and torch's older matrix functions."""

from . import api, decompositions, lu, matrix_methods, products, helpers, legacy, matmul
