"""Recorded events and their summaries: ``FunctionEvent``, ``FunctionEventAvg``, ``EventList``.

Times are microseconds, as in torch. An event's *total* time is its wall time; its
*self* time is that minus the totals of the events nested directly inside it (on the
same thread). ``EventList.table`` prints torch's table::

    ------------------  ------------  ------------  ------------  ------------  ------------  ------------
                  Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls
    ------------------  ------------  ------------  ------------  ------------  ------------  ------------
           aten::matmul        60.00%      30.000us        60.00%      30.000us      10.000us             3
    ...
    Self CPU time total: 50.000us
"""

from __future__ import annotations

import json
import os

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


class Interval:
    """``start`` and ``end`` in microseconds since the profile began."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class _TimedStats:
    """The derived fields shared by one event and an average of several (``count`` calls)."""

    device_type = "CPU"
    is_async = False
    is_remote = False
    is_legacy = False
    is_user_annotation = False
    node_id = -1
    overload_name = ""
    use_device = None
    device_time_total = 0.0
    self_device_time_total = 0.0
    device_memory_usage = 0
    self_device_memory_usage = 0
    flops = 0

    @property
    def cpu_time(self) -> float:
        """Average total time per call (us)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time  # torch's older names
    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)


class FunctionEvent(_TimedStats):
    """One op application, ``record_function`` range or backward node, on one thread."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None,
                 cpu_memory_usage=0, sequence_nr=-1) -> None:  # fmt: skip
        self.id, self.name, self.thread = id, name, thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.own_memory_usage = cpu_memory_usage  # bytes of the op's own output
        self.sequence_nr = sequence_nr
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.own_memory_usage

    @property
    def cpu_memory_usage(self) -> int:
        return self.own_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
            f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
            f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
            f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>"
        )


class FunctionEventAvg(_TimedStats):
    """The sum over the events of one key (name, and shapes or stack when grouped by them)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None

    def add(self, event: FunctionEvent, with_shapes: bool, with_stack: bool) -> FunctionEventAvg:
        if self.key is None:
            self.key = event.key
            self.input_shapes = event.input_shapes if with_shapes else None
            self.stack = event.stack if with_stack else None
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>"
        )


def link_children(events: list[FunctionEvent]) -> None:
    """Set ``cpu_parent`` / ``cpu_children``: per thread, the innermost enclosing interval."""
    by_thread: dict[int, list[FunctionEvent]] = {}
    for event in events:
        event.cpu_children, event.cpu_parent = [], None
        by_thread.setdefault(event.thread, []).append(event)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
        open_events: list[FunctionEvent] = []
        for event in thread_events:
            while open_events and open_events[-1].time_range.end < event.time_range.end:
                open_events.pop()  # (ends before this one does: not an enclosing range)
            if open_events:
                event.cpu_parent = open_events[-1]
                open_events[-1].cpu_children.append(event)
            open_events.append(event)


class EventList(list):
    """A list of events with torch's summaries (``key_averages``, ``table``, chrome trace)."""

    def __init__(self, *args, profile_memory: bool = False, **kwargs) -> None:
        super().__init__(*args)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:  # fmt: skip
        """One ``FunctionEventAvg`` per name (and input shapes / top stack frames), in
        order of first appearance."""
        averages: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            key = (event.key,)
            if group_by_input_shapes:
                key += (str(event.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(event.stack[:group_by_stack_n])
            averages.setdefault(key, FunctionEventAvg()).add(
                event, group_by_input_shapes, group_by_stack_n > 0
            )
        return EventList(averages.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for event in self:
            total.add(event, False, False)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:  # fmt: skip
        """torch's table: one row per event (or average), sorted by the attribute ``sort_by``
        (largest first; ``"cuda_time_total"`` etc. are accepted and are 0 here)."""
        return build_table(self, sort_by, row_limit, max_name_column_width,
                           max_shapes_column_width, max_src_column_width, header,
                           top_level_events_only, self._profile_memory, time_unit)  # fmt: skip

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON ("X" complete events, microseconds)."""
        pid = os.getpid()
        trace = []
        for e in self:
            args = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            trace.append({"ph": "X", "cat": "cpu_op", "name": e.name, "pid": pid,
                          "tid": e.thread, "ts": e.time_range.start,
                          "dur": e.cpu_time_total, "args": args})  # fmt: skip
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms", "traceName": path}, f)


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_unit(time_us: float, unit: str | None) -> str:
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(unit or "")
    return _format_time(time_us) if scale is None else f"{time_us / scale:.3f}{unit}"


def _format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def build_table(events, sort_by, row_limit, max_name_width, max_shapes_width, max_src_width,
                header, top_level_only, profile_memory, time_unit) -> str:  # fmt: skip
    """The text of ``EventList.table`` (columns as torch's, 2 spaces between them)."""
    if not events:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    headers, widths, aligns = _columns(events, profile_memory, max_name_width,
                                       max_shapes_width, max_src_width)  # fmt: skip
    has_shapes, stacks = "Input Shapes" in headers, "Source Location" in headers
    src_width = widths[-1]

    def row(values) -> str:
        return "".join(f"{str(v):{a}{w}}  " for v, w, a in zip(values, widths, aligns))

    separator = "".join("-" * w + "  " for w in widths)
    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * (len(separator) - 2), header]
    if top_level_only:
        lines += ["=" * (len(separator) - 2), "This report only display top-level ops statistics"]
    lines += [separator, row(headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key if len(e.key) < max_name_width - 3 else e.key[: max_name_width - 3] + "..."
        values = [name, _format_share(e.self_cpu_time_total, total),
                  _format_unit(e.self_cpu_time_total, time_unit),
                  _format_share(e.cpu_time_total, total),
                  _format_unit(e.cpu_time_total, time_unit),
                  _format_unit(e.cpu_time, time_unit)]  # fmt: skip
        if profile_memory:
            values += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        values.append(e.count)
        if has_shapes:
            values.append(str(e.input_shapes)[: widths[len(values)]])
        if stacks:
            values.append(_trim_path(e.stack[0], src_width) if e.stack else "")
        lines.append(row(values))
        if stacks:
            blank = [""] * (len(headers) - 1)
            lines += [row(blank + [_trim_path(s, src_width)]) for s in (e.stack or [])[1:]]
            lines.append(row(blank + [""]))
    lines += [separator, f"Self CPU time total: {_format_unit(total, time_unit)}"]
    return "\n".join(lines) + "\n"


def _columns(events, profile_memory, max_name_width, max_shapes_width, max_src_width):
    """Headers, widths and alignments of the table's columns (torch's: 12 wide, names and
    shapes as wide as the longest, within their maxima)."""
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [min(max(len(e.key) for e in events) + 4, max_name_width)]
    widths += [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if any(e.input_shapes for e in events):
        headers.append("Input Shapes")
        widths.append(min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_width))
        aligns.append(">")
    stacks = [e.stack for e in events if e.stack]
    if stacks:
        headers.append("Source Location")
        widths.append(min(max(len(s) for stack in stacks for s in stack) + 4, max_src_width))
        aligns.append("<")
    return headers, widths, aligns


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = "..." + path[len(path) - width + 3 :]
    return path
