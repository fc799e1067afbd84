"""utils.benchmark: Timer measurements, Measurement statistics and printout, Compare."""

import re
import time

import numpy as np
import pytest

import tinyattn
from tinyattn.utils import benchmark
from tinyattn.utils.benchmark import Compare, Measurement, TaskSpec, Timer


def test_timeit_measures_a_sleep_within_loose_bounds():
    m = Timer(stmt="time.sleep(0.001)", setup="import time").timeit(5)
    assert m.number_per_run == 5 and len(m.times) == 1
    # a 1 ms sleep never takes less than 1 ms; the upper bound only rules out unit errors
    assert 0.001 <= m.mean < 0.5
    assert m.median == m.mean


def test_globals_are_used_and_copied():
    calls = []
    g = {"f": lambda: calls.append(1)}
    m = Timer(stmt="f()", globals=g).timeit(10)
    assert len(calls) == 10 + 2  # 10 timed runs after a warmup of max(10 // 100, 2)
    assert m.number_per_run == 10
    assert set(g) == {"f"}  # the caller's dict is not written to


def test_blocked_autorange_spends_at_least_min_run_time():
    x = tinyattn.ones(4, 4)
    m = Timer(stmt="x @ x", globals={"x": x}).blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02
    assert m.number_per_run >= 1 and len(m.times) >= 1
    assert all(t > 0 for t in m.times)
    assert m.times == [t / m.number_per_run for t in m.raw_times]


def test_adaptive_autorange_takes_more_than_three_blocks_or_hits_max():
    m = Timer(stmt="sum(range(50))").adaptive_autorange(max_run_time=0.5)
    assert len(m.times) > 3 or sum(m.raw_times) > 0.5


def test_statistics_match_numpy():
    spec = TaskSpec(stmt="f()", setup="pass")
    raw = [4.0, 1.0, 3.0, 2.0, 10.0]
    m = Measurement(2, raw, spec)
    times = np.array(raw) / 2
    assert m.mean == pytest.approx(times.mean())
    assert m.median == pytest.approx(np.median(times))
    assert m.iqr == pytest.approx(np.quantile(times, 0.75) - np.quantile(times, 0.25))


def test_repr_layout_of_many_measurements():
    spec = TaskSpec(stmt="f()", setup="pass", label="attn", sub_label="L=8", description="fused")
    m = Measurement(100, [1.0e-3, 1.1e-3, 1.2e-3, 1.0e-3], spec)
    lines = repr(m).splitlines()
    assert re.match(r"<tinyattn\.utils\.benchmark\.common\.Measurement object at 0x", lines[0])
    assert lines[1:3] == ["attn: L=8", "fused"]
    assert lines[3] == "  Median: 10.50 us"
    assert lines[4] == "  IQR:    1.25 us (10.00 to 11.25)"
    assert lines[5] == "  4 measurements, 100 runs per measurement, 1 thread"
    # iqr / median = 11.9%: torch's milder warning (> 10%, < 25%)
    assert lines[6:] == [
        "  WARNING: Interquartile range is 11.9% of the median measurement.",
        "           This could indicate system fluctuation.",
    ]


@pytest.mark.parametrize(
    "raw", [[1e-3, 1.1e-3, 1.2e-3, 1e-3], [2e-9, 3e-9], [5.0], [1.0, 1.0, 2.0, 3.0, 9.0]]
)
def test_repr_matches_torch(raw):
    torch_benchmark = pytest.importorskip("torch.utils.benchmark.utils.common")
    kwargs = dict(stmt="f(x)", setup="import os", label="lbl", sub_label="s", description="d")
    ours = repr(Measurement(10, raw, TaskSpec(**kwargs)))
    theirs = repr(torch_benchmark.Measurement(10, raw, torch_benchmark.TaskSpec(**kwargs)))
    assert ours.splitlines()[1:] == theirs.splitlines()[1:]


def test_repr_warns_of_a_wide_spread_and_single_measurement_layout():
    spec = TaskSpec(stmt="g(x)", setup="import os")
    noisy = Measurement(1, [1.0, 1.0, 2.0, 3.0], spec)
    text = repr(noisy)
    assert "WARNING: Interquartile range is" in text and "of the median measurement" in text
    single = repr(Measurement(20, [0.02], spec)).splitlines()
    assert single[1:] == [
        "g(x)",
        "setup: import os",
        "  1.00 ms",
        "  1 measurement, 20 runs , 1 thread",
    ]


def test_compare_table_has_rows_columns_and_unit():
    results = []
    for n in (1, 2):
        for desc in ("a", "b"):
            spec = TaskSpec(
                stmt="s", setup="pass", label="sums", sub_label=f"n={n}", description=desc
            )
            results.append(Measurement(1, [n * 1e-6, n * 1e-6], spec))
    text = str(Compare(results))
    lines = text.splitlines()
    assert lines[0].startswith("[") and " sums " in lines[0] and lines[0].endswith("]")
    assert re.match(r"\s+\|\s+a\s+\|\s+b", lines[1])
    assert lines[2].startswith("1 threads: ---")
    assert re.match(r"\s+n=1\s+\|\s+1\.0\s+\|\s+1\.0", lines[3])
    assert re.match(r"\s+n=2\s+\|\s+2\.0\s+\|\s+2\.0", lines[4])
    assert "Times are in microseconds (us)." in text
    with pytest.raises(ValueError, match="Measurement"):
        Compare([1.0])


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="stmt"):
        Timer(stmt=lambda: None)
    with pytest.raises(ValueError, match="num_threads"):
        Timer(num_threads=0)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer().repeat()


def test_reachable_from_the_package():
    assert tinyattn.utils.benchmark is benchmark
    assert time.perf_counter  # (the default clock)


@pytest.mark.parametrize("trim", [False, True])
def test_compare_matches_torch(trim):
    common = pytest.importorskip("torch.utils.benchmark.utils.common")
    torch_compare = pytest.importorskip("torch.utils.benchmark.utils.compare")
    ours, theirs = [], []
    for i, n in enumerate((1, 10, 100)):
        for j, desc in enumerate(("fused", "math")):
            raw = [(n + j) * 1.3e-6 * (1 + 0.01 * k) for k in range(5)]
            kwargs = dict(stmt="f()", setup="pass", label="attention", sub_label=f"L={n}",
                          description=desc, num_threads=1 + (i == 2))  # fmt: skip
            ours.append(Measurement(1, raw, TaskSpec(**kwargs)))
            theirs.append(common.Measurement(1, raw, common.TaskSpec(**kwargs)))
    a, b = Compare(ours), torch_compare.Compare(theirs)
    if trim:
        a.trim_significant_figures()
        b.trim_significant_figures()
    assert str(a) == str(b)
