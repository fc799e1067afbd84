"""Special functions (erfc, lgamma, digamma, i0 ..., the incomplete gamma) and their series."""

from . import functions, igamma
