"""tinyattn.profiler: what a known program records, nesting, the table, the chrome trace."""

import json
import threading
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd import custom_function
from tinyattn.autograd import function as array_function
from tinyattn.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def counts(prof, **kwargs) -> dict:
    return {e.key: e.count for e in prof.key_averages(**kwargs)}


def test_counts_the_ops_a_program_runs():
    x = tinyattn.ones(4, 4)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = x @ x
        y = y @ x
        (y @ x).sum()
    assert counts(prof) == {"aten::matmul": 3, "aten::sum": 1}


def test_apply_is_restored_and_unprofiled_runs_record_nothing():
    before = array_function.Function.__dict__["apply"]
    before_custom = custom_function.Function.__dict__["apply"]
    x = tinyattn.ones(2, 2)
    with profile() as prof:
        assert array_function.Function.__dict__["apply"] is not before
        x * x
    assert array_function.Function.__dict__["apply"] is before
    assert custom_function.Function.__dict__["apply"] is before_custom
    x * x  # after the block: not recorded
    assert counts(prof) == {"aten::mul": 1}
    from tinyattn.profiler import profiler as recorder_module

    assert (
        recorder_module._active == []
        and recorder_module._tracer not in tinyattn.core.engine._tracers
    )


def test_apply_is_restored_when_the_block_raises():
    before = array_function.Function.__dict__["apply"]
    with pytest.raises(ValueError, match="boom"), profile():
        raise ValueError("boom")
    assert array_function.Function.__dict__["apply"] is before


def test_record_function_ranges_nest_and_own_their_ops():
    x = tinyattn.ones(3, 3)

    @record_function("decorated")
    def inner():
        return x * 2

    with profile() as prof:
        with record_function("outer"):
            with record_function("middle"):
                inner()
            x + 1
    events = {e.name: e for e in prof.events()}
    assert events["middle"].cpu_parent is events["outer"]
    assert events["decorated"].cpu_parent is events["middle"]
    assert events["aten::mul"].cpu_parent is events["decorated"]
    assert events["aten::add"].cpu_parent is events["outer"]
    outer = events["outer"]
    assert (
        outer.cpu_time_total
        >= events["middle"].cpu_time_total
        >= events["aten::mul"].cpu_time_total
    )
    child_total = sum(c.cpu_time_total for c in outer.cpu_children)
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - child_total)
    # without a profile the decorator and the context manager still run the code
    assert float(inner().sum()) == 18.0


def test_backward_nodes_are_recorded():
    w = tinyattn.ones(3, 3, requires_grad=True)
    with profile() as prof:
        loss = (w @ w).sum()
        loss.backward()
    c = counts(prof)
    assert c["MatmulBackward0"] == 1 and c["SumBackward0"] == 1
    assert c["autograd::engine::evaluate_function: SumBackward0"] == 1
    events = {e.name: e for e in prof.events()}
    assert (
        events["SumBackward0"].cpu_parent
        is events["autograd::engine::evaluate_function: SumBackward0"]
    )
    assert np.allclose(w.grad.numpy(), 6.0)


def test_user_functions_are_recorded_by_class_name():
    class Double(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = tinyattn.ones(2, requires_grad=True)
    with profile() as prof:
        Double.apply(x).sum().backward()
    events = prof.events()
    double, double_backward = (
        next(e for e in events if e.name == n) for n in ("Double", "DoubleBackward")
    )
    forward_mul, backward_mul = (e for e in events if e.name == "aten::mul")
    assert forward_mul.cpu_parent is double  # the ops a user function runs nest in it
    assert backward_mul.cpu_parent is double_backward
    assert x.grad.tolist() == [2.0, 2.0]


def test_table_columns_and_shapes():
    x = tinyattn.ones(2, 5)
    with profile(record_shapes=True) as prof:
        x @ x.T
        x @ x.T
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    lines = table.splitlines()
    header = lines[1].split("  ")
    header = [h.strip() for h in header if h.strip()]
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                      "CPU time avg", "# of Calls"]  # fmt: skip
    assert lines[0] == lines[2] and set(lines[0]) == {"-", " "}
    assert lines[-1].startswith("Self CPU time total: ")
    matmul = next(line for line in lines if "aten::matmul" in line)
    assert matmul.split()[-1] == "2" and "100.00%" not in lines[1]
    grouped = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total")
    assert "Input Shapes" in grouped.splitlines()[1]
    assert "[[2, 5], [5, 2]]" in grouped


def test_self_percentages_add_up():
    x = tinyattn.ones(8, 8)
    with profile() as prof, record_function("block"):
        for _ in range(3):
            x = x @ x / 8
    averages = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in averages)
    shares = [100 * e.self_cpu_time_total / total for e in averages]
    assert sum(shares) == pytest.approx(100.0)
    block = next(e for e in averages if e.key == "block")
    assert block.cpu_time_total == pytest.approx(total)  # everything ran inside the block


def test_profile_memory_columns():
    x = tinyattn.ones(4, 4, dtype=tinyattn.float64)
    with profile(profile_memory=True) as prof:
        x * x
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table
    (mul,) = [e for e in prof.key_averages() if e.key == "aten::mul"]
    assert mul.self_cpu_memory_usage == 128


def test_chrome_trace_is_valid_json(tmp_path):
    x = tinyattn.ones(3, 3)
    with profile(record_shapes=True) as prof, record_function("step"):
        x @ x
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert {e["name"] for e in events} == {"step", "aten::matmul"}
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and isinstance(e["ts"], float)
    (matmul,) = [e for e in events if e["name"] == "aten::matmul"]
    assert matmul["args"]["Input Dims"] == [[3, 3], [3, 3]]


def test_threads_are_kept_apart():
    x = tinyattn.ones(2, 2)
    with profile() as prof:
        t = threading.Thread(target=lambda: x + x)
        t.start()
        t.join()
        x * x
    threads = {e.name: e.thread for e in prof.events()}
    assert threads["aten::add"] != threads["aten::mul"]


def test_schedule_records_only_active_steps():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(5)] == [ProfilerAction.NONE, ProfilerAction.WARMUP,
                                        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                        ProfilerAction.NONE]  # fmt: skip
    x = tinyattn.ones(2)
    handed = []
    with profile(schedule=s, on_trace_ready=lambda p: handed.append(counts(p))) as prof:
        for _ in range(6):
            x * 2
            prof.step()
    assert handed == [{"aten::mul": 2}]


def test_cuda_activity_warns_and_profiles_cpu():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with p:
        tinyattn.ones(2) + 1
    assert counts(p) == {"aten::add": 1}


def test_autograd_profiler_older_api():
    x = tinyattn.ones(3, 3)
    with tinyattn.autograd.profiler.profile(record_shapes=True) as prof:
        with tinyattn.autograd.profiler.record_function("block"):
            x * 2
    assert counts(prof) == {"block": 1, "aten::mul": 1}
    assert "Self CPU time total" in str(prof)
    assert str(prof).splitlines()[1].split()[0] == "Name"


def test_nested_profiles_both_record():
    x = tinyattn.ones(2)
    with profile() as outer:
        x + 1
        with profile() as inner:
            x * 2
    assert counts(outer) == {"aten::add": 1, "aten::mul": 1}
    assert counts(inner) == {"aten::mul": 1}


def test_with_stack_names_this_file():
    x = tinyattn.ones(2)
    with warnings.catch_warnings(), profile(with_stack=True) as prof:
        x + 1
    (event,) = prof.events()
    assert "test_profiler.py" in event.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_sdpa_is_one_op():
    q = tinyattn.ones(1, 2, 4, 8)
    with profile() as prof:
        tinyattn.nn.functional.scaled_dot_product_attention(q, q, q)
    assert counts(prof).get("aten::scaled_dot_product_attention") == 1


def test_tensorboard_trace_handler_writes_a_trace_per_active_span(tmp_path):
    handler = tensorboard_trace_handler(str(tmp_path), worker_name="w")
    x = tinyattn.ones(2)
    with profile(
        schedule=schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler
    ) as prof:
        for _ in range(5):
            x + 1
            prof.step()
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2 and all(
        f.name.startswith("w.") and f.name.endswith(".pt.trace.json") for f in files
    )
    for f in files:
        assert [e["name"] for e in json.loads(f.read_text())["traceEvents"]] == ["aten::add"]
