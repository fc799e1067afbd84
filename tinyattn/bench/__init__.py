"""Benchmarks: ``python -m tinyattn.bench [--suite S,...] [--rounds N] [--quick] [--json PATH]``.

The main harness (``_harness``) runs tinyattn and torch each in fresh processes,
alternating over rounds, with the same cases written once against the torch API
(``_cases``), plus a "same process" column that shows how they interfere.
``--legacy`` gives the older in-process report (``_legacy``: raw kernels, peak
memory, cold start).
"""

from ._harness import main

__all__ = ["main"]
