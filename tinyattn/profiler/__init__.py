"""``tinyattn.profiler``: where the time goes, op by op, in torch's API and table.

>>> import tinyattn as torch
>>> from tinyattn.profiler import profile, record_function, ProfilerActivity
>>> x = torch.ones(8, 8, requires_grad=True)
>>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
...     with record_function("model_inference"):
...         loss = (x @ x).sum()
...     loss.backward()
>>> sorted({e.key for e in prof.key_averages()})[:3]
['MatmulBackward0', 'SumBackward0', 'aten::matmul']

What is recorded and how (no cost when no profile is active): ``profiler.py``;
events, averages and the table: ``_events.py``.
"""

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._profile import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)
from .profiler import record_function

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]
