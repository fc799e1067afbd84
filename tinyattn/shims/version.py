"""``tinyattn.version``: torch's build metadata module, answered as a CPU-only build.

``cuda``, ``hip``, ``rocm`` and ``xpu`` are None (no accelerator toolkit was built in), as
in a CPU build of torch, so ``if torch.version.cuda:`` takes the CPU path. ``__version__``
is tinyattn's own version; ``git_version`` is ``"unknown"`` (tinyattn records no commit).
"""

from __future__ import annotations

from .._version import __version__

cuda: str | None = None
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
debug = False
git_version = "unknown"

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]
