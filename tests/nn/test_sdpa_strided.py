"""SDPA on heads that are views of a fused qkv projection (the GPT pattern).

``qkv(x).split(d, dim=2)`` then ``.view(b, t, h, dh).transpose(1, 2)``: the fused kernels
read these views in place, and the output is laid out as torch's CPU SDPA lays it out
(the memory order of q where torch runs its flash kernel, contiguous where it runs its
math path), so that ``y.transpose(1, 2).view(b, t, d)`` succeeds or fails as under torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F

b, t, h, dh = 2, 7, 3, 4
d = h * dh

CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "bool mask": dict(attn_mask="bool"),
    "float mask": dict(attn_mask="float"),
    "gqa": dict(enable_gqa=True),
    "dropout": dict(dropout_p=0.5),
    "value dim differs": dict(value_dim=2 * dh),
    "3-d": dict(three_d=True),
}


def _heads(lib, x, case):
    """q, k, v as the GPT pattern views of ``x`` (b, t, (h + 2 hkv) * dh [+ dv extra])."""
    hkv = 1 if case.get("enable_gqa") else h
    dv = case.get("value_dim", dh)
    q, k, v = x.split([h * dh, hkv * dh, hkv * dv], dim=2)
    if case.get("three_d"):
        return q, k, v[..., :dh] if dv != dh else v
    return (
        q.view(b, t, h, dh).transpose(1, 2),
        k.view(b, t, hkv, dh).transpose(1, 2),
        v.view(b, t, hkv, dv).transpose(1, 2),
    )


def _run(lib, functional, x_np, case):
    x = lib.tensor(x_np, requires_grad=True)
    q, k, v = _heads(lib, x, case)
    kwargs = {key: val for key, val in case.items() if key in ("is_causal", "dropout_p")}
    if case.get("enable_gqa"):
        kwargs["enable_gqa"] = True
    if case.get("attn_mask") == "bool":
        kwargs["attn_mask"] = lib.tensor(
            np.tril(np.ones((t, t), bool)) | np.eye(t, k=3, dtype=bool)
        )
    elif case.get("attn_mask") == "float":
        kwargs["attn_mask"] = lib.tensor(np.linspace(-1, 1, t * t).reshape(t, t))
    y = functional.scaled_dot_product_attention(q, k, v, **kwargs)
    try:
        y.transpose(-3, -2).view(b, t, -1)
        viewable = True
    except RuntimeError:
        viewable = False
    merged = y.transpose(-3, -2).contiguous().view(b, t, -1)
    (merged * merged).sum().backward()
    return y, viewable, x.grad


@pytest.mark.parametrize("name", list(CASES))
def test_gpt_heads_output_layout_and_values_match_torch(name):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    width = (h + 2 * (1 if case.get("enable_gqa") else h)) * dh + (
        h * (case["value_dim"] - dh) if "value_dim" in case else 0
    )
    x_np = np.random.default_rng(0).standard_normal((b, t, width))
    y, viewable, grad = _run(tinyattn, F, x_np, case)
    y_t, viewable_t, grad_t = _run(torch, torch.nn.functional, x_np, case)
    assert y.stride() == y_t.stride(), name
    assert viewable == viewable_t, name
    if "dropout_p" not in case:  # (dropout masks differ between the libraries)
        np.testing.assert_allclose(y.detach().numpy(), y_t.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grad.numpy(), grad_t.numpy(), rtol=1e-10, atol=1e-12)


def test_gpt_heads_float32_forward_and_grads_equal_contiguous_heads():
    """The in-place (strided) kernels and contiguous copies of the heads give the same numbers."""
    x_np = np.random.default_rng(1).standard_normal((b, t, 3 * d)).astype(np.float32)
    x = tinyattn.tensor(x_np, requires_grad=True)
    q, k, v = _heads(tinyattn, x, {})
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert not y.is_contiguous() and y.transpose(1, 2).is_contiguous()
    y.backward(tinyattn.ones_like(y))

    x2 = tinyattn.tensor(x_np, requires_grad=True)
    q2, k2, v2 = (a.contiguous() for a in _heads(tinyattn, x2, {}))
    y2 = F.scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    assert y2.is_contiguous()
    y2.backward(tinyattn.ones_like(y2))
    np.testing.assert_allclose(y.detach().numpy(), y2.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_a_size_one_dim_is_no_evidence_for_the_output_layout():
    """q (1, H, L, D) made by permuting an (L, H, D) array with a new size-1 dim: the size-1
    dim's stride means nothing, so the output follows the (L, H, D) memory as torch's does
    and ``out.transpose(1, 2).view(1, L, H * D)`` works (it raised before)."""
    L, H, D = 4, 3, 5
    x = tinyattn.tensor(np.random.default_rng(0).standard_normal((L, H, D)))
    q = x.unsqueeze(-1).permute(3, 1, 0, 2)
    out = F.scaled_dot_product_attention(q, q, q)
    assert out.stride()[1:] == (D, H * D, 1)
    assert out.transpose(1, 2).view(1, L, H * D).shape == (1, L, H * D)
