"""``tinyattn.autograd.profiler``: torch's older profiler API, on ``tinyattn.profiler``.

>>> import tinyattn as torch
>>> x = torch.ones(3, 3)
>>> with torch.autograd.profiler.profile() as prof:
...     with torch.autograd.profiler.record_function("block"):
...         y = x * 2
>>> sorted(e.key for e in prof.key_averages())
['aten::mul', 'block']

``print(prof)`` or ``prof.key_averages().table(sort_by="self_cpu_time_total")`` prints
the same table as ``tinyattn.profiler``. The recorder lives in ``tinyattn.profiler``
and is imported on first use (``import tinyattn`` does not load it).
"""

from __future__ import annotations

import importlib

__all__ = ["profile", "record_function", "emit_nvtx"]


def _profiler():
    return importlib.import_module("tinyattn.profiler")


def profile(enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
            record_shapes: bool = False, with_flops: bool = False,
            profile_memory: bool = False, with_stack: bool = False,
            with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
            **ignored):  # fmt: skip
    """torch's ``autograd.profiler.profile(...)``: a ``tinyattn.profiler.profile``
    recording CPU ops (CUDA is asked for with ``use_cuda``; there is none, so it warns)."""
    p = _profiler()
    activities = [p.ProfilerActivity.CPU]
    if use_cuda or use_device == "cuda":
        activities.append(p.ProfilerActivity.CUDA)
    return p.profile(activities=activities, record_shapes=record_shapes,
                     profile_memory=profile_memory, with_stack=with_stack,
                     enabled=enabled)  # fmt: skip


def record_function(name: str, args: str | None = None):
    """A named range in the profile (context manager or decorator)."""
    return _profiler().record_function(name, args)


class emit_nvtx:
    """Accepted, no effect: there is no NVTX (CUDA) here."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled

    def __enter__(self) -> emit_nvtx:
        return self

    def __exit__(self, *exc) -> None:
        return None
