"""Reductions along dims: sum/mean/max ..., softmax, scans (cumsum ...), statistics, numerical integration and histograms."""

from . import cumulative, numeric, reduction, stats, softmax
