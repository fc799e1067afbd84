"""The inference suite and the JAX column of the benchmark harness, on tiny shapes (not timed:
the figures are only checked to be there, positive and consistent)."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.bench import _cases, _harness, _inference

FIGURES = {
    "construction s",
    f"prefill {_inference.config(True)['prompt']} tokens ms",
    "decode tokens/s, concatenating cache",
    "decode tokens/s, preallocated cache",
    "peak RSS MiB",
}


def _libs():
    libs = [tinyattn]
    try:
        import torch
    except ImportError:  # not installed, or hidden by TINYATTN_TESTS_WITHOUT_TORCH
        return libs
    return libs + [torch]


@pytest.mark.parametrize("lib", _libs(), ids=lambda lib: lib.__name__)
def test_quick_inference_figures(lib):
    figures = _inference.run(lib, quick=True, repeats=1)
    assert set(figures) == FIGURES
    assert all(value > 0 for value in figures.values())


@pytest.mark.parametrize("lib", _libs(), ids=lambda lib: lib.__name__)
def test_the_caches_give_the_same_logits(lib):
    c = _inference.config(True)
    lib.manual_seed(0)
    model = _cases.gpt2_model(
        lib, **{k: c[k] for k in ("n_layer", "d", "n_head", "n_ctx", "vocab")}
    )
    prompt = lib.tensor(np.arange(c["prompt"])[None] % c["vocab"])
    out = {}
    with lib.inference_mode():
        for kind in ("concatenating", "preallocated"):
            cache = _inference.new_cache(lib, kind, c)
            steps = [model(prompt, cache)]
            steps += [model(lib.tensor([[t]]), cache) for t in (3, 1, 4)]
            assert cache.length == c["prompt"] + 3
            out[kind] = np.concatenate([s.numpy()[0] for s in steps])
    np.testing.assert_allclose(out["preallocated"], out["concatenating"], rtol=1e-6, atol=1e-6)


def test_process_plan_adds_jax_only_where_it_has_cases():
    alone, together = _harness.process_plan("layers", torch=True, jax=True)
    assert alone == [["tinyattn"], ["torch"], ["jax"]] and together == ["tinyattn", "torch"]
    assert _harness.process_plan("kernels", torch=True, jax=True)[0] == [["tinyattn"], ["torch"]]
    assert _harness.process_plan("inference", torch=True, jax=True) == (
        [["tinyattn"], ["torch"], ["jax"]],
        None,
    )
    assert _harness.process_plan("train", torch=False, jax=False) == ([["tinyattn"]], None)


def test_inference_table_shows_ranges_and_ratios():
    row = _harness.summarize({"tinyattn": [2.0, 4.0, 3.0], "torch": [1.0, 1.5, 2.0], "jax": [1.0]})
    assert row["tinyattn"] == 3.0 and row["tinyattn min"] == 2.0 and row["tinyattn max"] == 4.0
    text = _harness.format_table("inference", {"decode tokens/s, preallocated cache": row})
    head, _, line = text.splitlines()
    assert head == "| figure | tinyattn | torch | jax | tinyattn/torch | jax/torch | tinyattn/jax |"
    assert line == (
        "| decode tokens/s, preallocated cache | 3.00 (2.00-4.00) | 1.50 (1.00-2.00) "
        "| 1.00 (1.00-1.00) | 2.00x | 0.67x | 3.00x |"
    )
    without_jax = _harness.format_table("inference", {"x": _harness.summarize({"tinyattn": [1.0]})})
    assert without_jax.splitlines()[0] == "| figure | tinyattn |"


def test_jax_cases_run_quick():
    pytest.importorskip("jax", reason="JAX is a benchmark extra; its column is left out without it")
    from tinyattn.bench import _jax_cases

    for suite in _jax_cases.suites(quick=True).values():
        for setup in suite.values():
            run = setup()
            run()
            run()
    figures = _jax_cases.run_inference(quick=True, repeats=1)
    assert set(figures) == FIGURES - {"decode tokens/s, concatenating cache"}
    assert all(value > 0 for value in figures.values())
