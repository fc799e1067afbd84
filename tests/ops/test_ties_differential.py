"""Property tests against torch: gradients at ties, zeros and bounds.

Values come from {-1, 0, 1, 2} (halved, sometimes), with NaN and inf in half the
examples, so ties, zeros, clamp bounds and non-finite elements are the common case rather
than a measure-zero accident. For each op the forward value and
the float64 gradient of a fixed weighted sum must equal torch's: amax/amin spread the
gradient evenly over ties, max/min(dim) and median(dim) route it to the index they
return, cumprod/prod handle zeros exactly, norms at 0 (p = 0, 1, 2, 3, inf, -inf, 'fro')
follow torch's subgradient choices, clamp passes the gradient at a bound.

Ops whose tie-breaking index torch leaves unspecified (topk, kthvalue, sort's order
among equal values when not stable) are compared on values only.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tinyattn

torch = pytest.importorskip("torch")

SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@st.composite
def tie_arrays(draw, min_dims: int = 1):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_dims, max_size=3)))
    n = int(np.prod(shape))
    pool = [-1.0, 0.0, 1.0, 2.0] + ([math.nan, math.inf] if draw(st.booleans()) else [])
    values = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    scale = draw(st.sampled_from([1.0, 0.5]))
    return np.array(values).reshape(shape) * scale


def _dim(data, x):
    return data.draw(st.integers(-x.ndim, x.ndim - 1), label="dim")


def _dims(data, x):
    picked = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim))
    return None if not picked else tuple(picked)


INF = math.inf

OPS = {
    "amax": lambda lib, x, d, k: lib.amax(x, d["dims"] or (), keepdim=k),
    "amin": lambda lib, x, d, k: lib.amin(x, d["dims"] or (), keepdim=k),
    "max_all": lambda lib, x, d, k: x.max(),
    "min_all": lambda lib, x, d, k: x.min(),
    "max_dim": lambda lib, x, d, k: lib.max(x, d["dim"], keepdim=k),
    "min_dim": lambda lib, x, d, k: lib.min(x, d["dim"], keepdim=k),
    "median_dim": lambda lib, x, d, k: lib.median(x, d["dim"], keepdim=k),
    "median_all": lambda lib, x, d, k: lib.median(x),
    "maximum": lambda lib, x, d, k: lib.maximum(x, x.flip(-1)),
    "minimum": lambda lib, x, d, k: lib.minimum(x, x.flip(0)),
    "fmax": lambda lib, x, d, k: lib.fmax(x, x.flip(-1)),
    "cumprod": lambda lib, x, d, k: lib.cumprod(x, d["dim"]),
    "cumsum": lambda lib, x, d, k: lib.cumsum(x, d["dim"]),
    "cummax": lambda lib, x, d, k: lib.cummax(x, d["dim"]),
    "cummin": lambda lib, x, d, k: lib.cummin(x, d["dim"]),
    "prod_dim": lambda lib, x, d, k: lib.prod(x, d["dim"], keepdim=k),
    "prod_all": lambda lib, x, d, k: lib.prod(x),
    "abs": lambda lib, x, d, k: x.abs(),
    "sign": lambda lib, x, d, k: x.sign() * x,
    "relu": lambda lib, x, d, k: lib.relu(x),
    "clamp_numbers": lambda lib, x, d, k: lib.clamp(x, 0.0, 1.0),
    "clamp_tensors": lambda lib, x, d, k: lib.clamp(x, x.flip(-1) * 0.5, x.flip(0) + 0.5),
    "clamp_crossed": lambda lib, x, d, k: lib.clamp(x, 1.0, 0.0),
    "var": lambda lib, x, d, k: lib.var(x, d["dims"], correction=d["correction"], keepdim=k),
    "std": lambda lib, x, d, k: lib.std(x, d["dims"], correction=d["correction"], keepdim=k),
    "var_all": lambda lib, x, d, k: lib.var(x, correction=d["correction"]),
    "logsumexp": lambda lib, x, d, k: lib.logsumexp(x, d["dim"], keepdim=k),
    "softmax": lambda lib, x, d, k: lib.softmax(x, d["dim"]),
    "sort_values": lambda lib, x, d, k: lib.sort(x, d["dim"], stable=True)[0],
    "sort_stable": lambda lib, x, d, k: lib.sort(x, dim=d["dim"], stable=True),
    "sort_desc_stable": lambda lib, x, d, k: lib.sort(
        x, dim=d["dim"], descending=True, stable=True
    ),
    "argsort_stable": lambda lib, x, d, k: lib.argsort(x, dim=d["dim"], stable=True) * 1.0,
    "topk_values": lambda lib, x, d, k: lib.topk(x, 1, d["dim"])[0],
    "where": lambda lib, x, d, k: lib.where(x > 0, x, x * x),
    "masked_fill": lambda lib, x, d, k: x.masked_fill(x == 1, 0.5),
    "pow_zero": lambda lib, x, d, k: x ** d["power"],
}

# torch leaves the index topk picks among equal values unspecified (its gradient follows it)
VALUES_ONLY = {"topk_values"}

NORMS = [0, 1, 2, 3, INF, -INF, 0.5]


@SETTINGS
@given(st.data())
def test_values_and_gradients_at_ties_as_torch(data):
    x = data.draw(tie_arrays(), label="x")
    name = data.draw(st.sampled_from(sorted(OPS)), label="op")
    extra = {
        "dim": _dim(data, x),
        "dims": _dims(data, x),
        "correction": data.draw(st.sampled_from([0, 1, 2]), label="correction"),
        "power": data.draw(st.sampled_from([0, 0.0, 1, 2, 0.5, 3, -1]), label="power"),
    }
    keepdim = data.draw(st.booleans(), label="keepdim")
    grad = name not in VALUES_ONLY
    if name in ("var", "std", "var_all") and (extra["dims"] is None or name == "var_all"):
        # over all dims with n <= correction torch's gradient is +-inf of g's sign at every
        # element (whatever the side of the mean): a documented difference, not compared
        grad = grad and x.size > extra["correction"]
    _compare(lambda lib, t: OPS[name](lib, t, extra, keepdim), x, name, grad=grad)


@SETTINGS
@given(st.data())
def test_norms_and_their_gradients_at_zero_as_torch(data):
    x = data.draw(tie_arrays(), label="x")
    if data.draw(st.booleans(), label="zero row"):
        x[..., 0] = 0.0
        if x.ndim > 1:
            x[0] = 0.0
    p = data.draw(st.sampled_from(NORMS + ["fro"]), label="p")
    dim = _dims(data, x)
    keepdim = data.draw(st.booleans(), label="keepdim")
    fn = data.draw(st.sampled_from(["norm", "vector_norm", "dist"]), label="fn")
    if fn == "norm":
        if p == "fro" and dim is not None and len(dim) > 2:
            return
        f = lambda lib, t: lib.norm(t, p, dim, keepdim)  # noqa: E731
    elif fn == "vector_norm":
        if p == "fro":
            return
        f = lambda lib, t: lib.linalg.vector_norm(t, p, dim, keepdim)  # noqa: E731
    else:
        if p == "fro":
            return
        f = lambda lib, t: lib.dist(t, t.flip(0) * 0.5, p)  # noqa: E731
    _compare(f, x, f"{fn}(p={p}, dim={dim})")


def _run(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # any error counts as "raised"
            return None, e


def _compare(f, x, what: str, grad: bool = True) -> None:
    note(what)
    results = {}
    for name, lib in (("torch", torch), ("tinyattn", tinyattn)):
        leaf = lib.tensor(x.tolist(), dtype=lib.float64).reshape(x.shape).requires_grad_(True)

        def go(lib=lib, leaf=leaf):
            out = f(lib, leaf)
            outs = list(out) if isinstance(out, tuple) else [out]
            first = outs[0]
            seed = np.round(np.linspace(-1, 1.3, first.numel()), 3).reshape(tuple(first.shape))
            if first.requires_grad:
                (first * lib.tensor(seed)).sum().backward()
            return outs, leaf.grad

        results[name] = _run(go)
    (want, t_err), (got, o_err) = results["torch"], results["tinyattn"]
    if t_err is not None:  # (torch's dist(p=0) backward raises: torch's bug, not compared)
        return
    assert o_err is None, f"{what}: tinyattn raised {o_err!r}"
    for g, w in zip(got[0], want[0]):
        assert g.dtype.name == str(w.dtype).split(".")[-1], (what, g.dtype, w.dtype)
        assert tuple(g.shape) == tuple(w.shape), (what, tuple(g.shape), tuple(w.shape))
        np.testing.assert_allclose(
            g.detach().numpy(), w.detach().numpy(), rtol=1e-12, atol=1e-12, err_msg=what
        )  # (NaN where torch has NaN: assert_allclose's default equal_nan)
    if not grad:
        return
    gw = np.zeros(x.shape) if want[1] is None else want[1].numpy()  # torch: None = zeros
    gg = np.zeros(x.shape) if got[1] is None else got[1].numpy()
    np.testing.assert_allclose(gg, gw, rtol=1e-10, atol=1e-12, err_msg=f"{what}: gradient")
