"""NaN and inf in attention inputs propagate exactly as in torch's math path, on every path.

Rule (semantics.md): only a -inf score (a False in a bool mask, the causal mask)
blocks a key; NaN anywhere in q, k, v or a float mask propagates as in torch's
math path, and a NaN row is not a blocked row. One NaN or inf is placed in q, k,
v or the float mask; outputs and gradients must match torch's (NaN where torch has
NaN, inf where it has inf, the finite values close) on every path: the fused
kernels (BLAS tiles and plain loops), their NumPy twins, the stored-weights path,
and ``nn.MultiheadAttention`` with ``need_weights`` True and False.
"""

import itertools

import numpy as np
import pytest

import tinyattn
from tinyattn.nn.functional import scaled_dot_product_attention as sdpa

torch = pytest.importorskip("torch")
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

B, H, L, S, D = 1, 2, 5, 7, 3
PLACES = {  # (array, index): a query row, a key, a value, a mask entry
    "q": (1, 3, 2),
    "k": (0, 4, 1),
    "v": (1, 6, 0),
    "mask": (2, 5),
}
VALUES = [np.nan, np.inf, -np.inf]
PATHS = ["fused numba", "fused numba-loops", "flash twin (numpy)", "stored weights"]


def _problem(where, value, dtype):
    rng = np.random.default_rng(0)
    a = {
        "q": rng.standard_normal((B, H, L, D)),
        "k": rng.standard_normal((B, H, S, D)),
        "v": rng.standard_normal((B, H, S, D)),
        "mask": rng.standard_normal((L, S)) * 0.5,
        "dout": rng.standard_normal((B, H, L, D)),
    }
    a = {name: x.astype(dtype) for name, x in a.items()}
    index = PLACES[where]
    a[where][(0,) * (a[where].ndim - len(index)) + index] = value
    return a


def _assert_same_pattern(ours, theirs, what, dtype):
    tol = 1e-9 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def _torch_sdpa(a, causal, with_mask):
    ts = {n: torch.tensor(a[n], requires_grad=True) for n in ("q", "k", "v", "mask")}
    mask = ts["mask"] if with_mask else None
    if causal and with_mask:
        mask = mask + torch.triu(torch.full((L, S), float("-inf"), dtype=mask.dtype), 1)
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            ts["q"], ts["k"], ts["v"], attn_mask=mask, is_causal=causal and not with_mask
        )
    out.backward(torch.tensor(a["dout"]))
    grads = [ts[n].grad for n in ("q", "k", "v", "mask")]
    return [out.detach().numpy()] + [None if g is None else g.numpy() for g in grads]


def _ours_sdpa(a, causal, with_mask, path, monkeypatch):
    backend = {"fused numba-loops": "numba-loops", "flash twin (numpy)": "numpy"}
    monkeypatch.setenv("TINYATTN_KERNELS", backend.get(path, "numba"))
    stored = path == "stored weights"  # a mask that requires grad takes that path
    ts = {n: tinyattn.tensor(a[n], requires_grad=n != "mask" or stored) for n in a}
    mask = ts["mask"] if with_mask else None
    if causal and with_mask:
        blocked = np.triu(np.full((L, S), -np.inf, a["q"].dtype), 1)
        mask = mask + tinyattn.tensor(blocked)
    out = sdpa(ts["q"], ts["k"], ts["v"], attn_mask=mask, is_causal=causal and not with_mask)
    assert (out.grad_fn.fused is None) == stored, path
    out.backward(ts["dout"])
    grads = [ts[n].grad for n in ("q", "k", "v", "mask")]
    return [out.detach().numpy()] + [None if g is None else g.numpy() for g in grads]


CASES = [
    (where, value, causal)
    for where, value, causal in itertools.product(PLACES, VALUES, [False, True])
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("where, value, causal", CASES)
def test_sdpa_non_finite_inputs_match_torch_math_path(
    where, value, causal, path, dtype, monkeypatch
):
    a = _problem(where, value, dtype)
    with_mask = where == "mask" or path == "stored weights"
    theirs = _torch_sdpa(a, causal, with_mask)
    ours = _ours_sdpa(a, causal, with_mask, path, monkeypatch)
    for name, o, t in zip(["out", "dq", "dk", "dv", "dmask"], ours, theirs):
        if o is not None and t is not None:
            _assert_same_pattern(o, t, f"{path} {where}={value} causal={causal}: {name}", dtype)
    if where != "mask" and np.isnan(value):  # one NaN poisons the head, as in torch
        assert np.isnan(ours[0][0, PLACES[where][0]]).any()  # (head, ...) of the NaN


def test_nan_in_one_key_reaches_every_output_of_its_head_on_the_fused_path():
    """The bug this file guards: float32 fused dropped the NaN, float64 zeroed the rows."""
    for dtype in (np.float32, np.float64):
        a = _problem("k", np.nan, dtype)
        out = sdpa(*(tinyattn.tensor(a[n]) for n in ("q", "k", "v")))
        assert np.isnan(out.numpy()[0, 0]).all() and np.isfinite(out.numpy()[0, 1]).all()


def test_fully_blocked_rows_still_give_zeros_and_nan_rows_are_not_blocked():
    a = _problem("q", np.nan, np.float32)
    keep = np.ones((L, S), bool)
    keep[0] = False  # query row 0 sees no key; q[0, 1, 3] holds the NaN
    out = sdpa(*(tinyattn.tensor(a[n]) for n in ("q", "k", "v")), attn_mask=tinyattn.tensor(keep))
    out = out.numpy()
    assert np.all(out[0, :, 0] == 0)  # blocked: zeros, in both heads
    assert np.isnan(out[0, 1, 3]).all()  # the NaN query row: NaN, not zeros
    assert np.isfinite(np.delete(out[0], 3, axis=1)).all()  # nothing else


# -- nn.MultiheadAttention ---------------------------------------------------------------------
E, N, HEADS = 4, 2, 2


def _mha_problem(where, value, dtype):
    rng = np.random.default_rng(1)
    a = {
        "query": rng.standard_normal((L, N, E)),
        "key": rng.standard_normal((S, N, E)),
        "value": rng.standard_normal((S, N, E)),
        "mask": rng.standard_normal((L, S)) * 0.5,
    }
    a = {name: x.astype(dtype) for name, x in a.items()}
    index = {"query": (1, 0, 2), "key": (3, 1, 0), "value": (6, 0, 1), "mask": (2, 4)}[where]
    a[where][index] = value
    return a


def _mha_run(lib, module, a, need_weights):
    ts = {n: lib.tensor(a[n], requires_grad=n != "mask") for n in a}
    out, weights = module(
        ts["query"], ts["key"], ts["value"], attn_mask=ts["mask"], need_weights=need_weights
    )
    loss = out.sum() + (0 if weights is None else (weights * weights).sum())
    loss.backward()
    results = [out.detach().numpy(), module.in_proj_weight.grad.numpy()]
    results += [ts[n].grad.numpy() for n in ("query", "key", "value")]
    return results + ([] if weights is None else [weights.detach().numpy()])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("where", ["query", "key", "value", "mask"])
@pytest.mark.parametrize("value", VALUES)
def test_multihead_attention_non_finite_inputs_match_torch(where, value, need_weights, dtype):
    torch.manual_seed(0)
    t_mha = torch.nn.MultiheadAttention(E, HEADS).to(getattr(torch, np.dtype(dtype).name))
    o_mha = tinyattn.nn.MultiheadAttention(E, HEADS, dtype=getattr(tinyattn, np.dtype(dtype).name))
    o_mha.load_state_dict({k: v.detach().numpy() for k, v in t_mha.state_dict().items()})
    a = _mha_problem(where, value, dtype)
    with sdpa_kernel(SDPBackend.MATH):
        theirs = _mha_run(torch, t_mha, a, need_weights)
    ours = _mha_run(tinyattn, o_mha, a, need_weights)
    names = ["out", "d in_proj_weight", "dquery", "dkey", "dvalue", "weights"]
    for name, o, t in zip(names, ours, theirs):
        _assert_same_pattern(
            o, t, f"MHA need_weights={need_weights} {where}={value}: {name}", dtype
        )
