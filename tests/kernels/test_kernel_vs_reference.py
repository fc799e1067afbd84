"""The fused numba kernels against their NumPy twins on random shapes (Hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyattn.kernels import reference

from ._problems import make_problem, run_flash

TOLERANCE = {np.float32: 2e-4, np.float64: 1e-10}


@st.composite
def problems(draw):
    Hkv = draw(st.integers(1, 2))
    return dict(
        B=draw(st.integers(1, 2)),
        Hkv=Hkv,
        Hq=Hkv * draw(st.integers(1, 3)),
        L=draw(st.sampled_from([1, 2, 7, 33, 129, 300])),
        S=draw(st.sampled_from([1, 3, 17, 64, 257, 530])),
        D=draw(st.sampled_from([1, 5, 16, 64, 256])),
        Dv=draw(st.sampled_from([1, 8, 33])),
        dtype=draw(st.sampled_from([np.float32, np.float64])),
        causal=draw(st.booleans()),
        mask_kind=draw(st.sampled_from([None, "key_padding", "bool_full", "float_rows"])),
        dropout_p=draw(st.sampled_from([0.0, 0.0, 0.25])),
        seed=draw(st.integers(0, 2**64 - 1)),
    )


def _mask(rng, kind, B, Hq, L, S):
    if kind == "key_padding":
        return rng.random((B, 1, 1, S)) > 0.3
    if kind == "bool_full":
        return rng.random((B, Hq, L, S)) > 0.5
    if kind == "float_rows":  # (L, S), broadcast over batch and heads
        return rng.standard_normal((L, S))
    return None


def _relative_error(a, b):
    a, b = np.nan_to_num(a, neginf=0.0), np.nan_to_num(b, neginf=0.0)
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))) if a.size else 0.0


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(problem=problems())
def test_fused_matches_reference(fused_backend, problem):
    rng = np.random.default_rng(problem["seed"] % 2**32)
    sizes = {name: problem[name] for name in ("B", "Hq", "Hkv", "L", "S", "D", "Dv")}
    q, k, v, dout = make_problem(rng, **sizes, dtype=problem["dtype"])
    options = dict(
        causal=problem["causal"],
        mask=_mask(rng, problem["mask_kind"], sizes["B"], sizes["Hq"], sizes["L"], sizes["S"]),
        dropout_p=problem["dropout_p"],
        seed=problem["seed"],
    )
    got = run_flash(q, k, v, dout, **options)
    out, logsumexp = reference.flash_attention_forward(q, k, v, **options)
    expected = (out, logsumexp) + reference.flash_attention_backward(
        dout, q, k, v, out, logsumexp, **options
    )
    names = ("out", "logsumexp", "dq", "dk", "dv")
    for name, a, b in zip(names, got, expected):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert np.array_equal(np.isneginf(a), np.isneginf(b)), name
        assert np.all(np.isfinite(a) | np.isneginf(a)), name
        assert _relative_error(a, b) < TOLERANCE[problem["dtype"]], name
