"""``profile``, ``schedule`` and the activity / action enums (``torch.profiler``'s API)."""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable

from ._events import EventList
from .profiler import Recorder

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.IntEnum):
    """torch's activities (same values). Only ``CPU`` is recorded: there is no device."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (the result of a ``schedule``)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:  # fmt: skip
    """Steps ``0..skip_first-1`` are skipped, then cycles of ``wait`` idle, ``warmup`` and
    ``active`` recorded steps (the last of them ``RECORD_AND_SAVE``), ``repeat`` times
    (0: forever). ``skip_first_wait=1`` drops the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(
            f"schedule(): invalid arguments wait={wait}, warmup={warmup}, active={active}, "
            f"repeat={repeat}, skip_first={skip_first}: active must be > 0, the others >= 0"
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable:  # fmt: skip
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``{worker_name}.{time in ns}.pt.trace.json`` (Chrome trace JSON; ``.gz`` if asked)."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip

            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(path)

    return handler


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class profile:
    """Record tinyattn's ops, ``record_function`` ranges and backward nodes in a block.

    >>> import tinyattn as torch
    >>> from tinyattn.profiler import profile, ProfilerActivity
    >>> x = torch.ones(4, 4)
    >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
    ...     y = x @ x @ x
    >>> [e.key for e in prof.key_averages()], prof.key_averages()[0].count
    (['aten::matmul'], 2)

    ``print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))`` prints
    torch's table; ``record_shapes=True`` with ``key_averages(group_by_input_shape=True)``
    adds the "Input Shapes" column; ``profile_memory=True`` adds "CPU Mem" (bytes of the
    outputs an op and the ops inside it made) and "Self CPU Mem"; ``with_stack=True``
    keeps the Python stack of each event (``group_by_stack_n``).
    With a ``schedule``, call ``prof.step()`` once per iteration: only the steps it marks
    active are recorded, and ``on_trace_ready(prof)`` runs at the end of each active span.
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 enabled: bool = True, **ignored) -> None:  # fmt: skip
        chosen = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            chosen.add(ProfilerActivity.CUDA)
        if chosen - supported_activities():
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
        self.activities = chosen
        self.enabled = enabled
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack = with_stack
        self.step_num = 0
        self._recorder = Recorder(record_shapes, profile_memory, with_stack)
        self._saved: EventList | None = None

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> None:
        if not self.enabled:
            return
        self._recorder.start()
        self._recorder.recording = self._records(self.step_num)

    def stop(self) -> None:
        if not self.enabled:
            return
        recording = self._recorder.recording
        self._recorder.stop()
        self._recorder.recording = False
        if recording and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _records(self, step: int) -> bool:
        return self.schedule(step) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def step(self) -> None:
        """End one iteration: hand finished traces to ``on_trace_ready``, advance the schedule."""
        previous = self.schedule(self.step_num)
        if previous is ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        self.step_num += 1
        recording = self._records(self.step_num)
        if recording and previous is not ProfilerAction.RECORD:
            self._recorder.events = []  # a new active span: the last one's events were handed off
        self._recorder.recording = recording

    # -- results --------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded event, ordered by start time, with parents and children linked."""
        return self._recorder.event_list()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:  # fmt: skip
        """The events summed per name (and per input shapes / top stack frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        """``events().table(...)``, as ``torch.autograd.profiler.profile.table``."""
        return self.events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> None:
        """Write the events to ``path`` as Chrome trace JSON (chrome://tracing, Perfetto)."""
        self.events().export_chrome_trace(path)

    def __str__(self) -> str:
        return self.table()
