"""tinyattn: a from-scratch autograd framework on NumPy with numba attention kernels."""

from ._version import __version__

__all__ = ["__version__"]
