"""scaled_dot_product_attention routes to the fused numba kernels when it can.

Fused: 3-D/4-D inputs with equal batch dims (GQA allowed) and a mask that needs
no gradient. Everything else takes the materialised path. Both must agree.
"""

import numpy as np
import pytest
from harness import run_gradcheck

import tinyattn
from tinyattn.nn.functional import scaled_dot_product_attention as sdpa
from tinyattn.nn.functional.attention import _fused_layout


def _qkv(shape_q, shape_kv, seed=0, dtype=np.float64, grad=True):
    rng = np.random.default_rng(seed)
    q = tinyattn.tensor(rng.standard_normal(shape_q).astype(dtype), requires_grad=grad)
    k = tinyattn.tensor(rng.standard_normal(shape_kv).astype(dtype), requires_grad=grad)
    v = tinyattn.tensor(rng.standard_normal(shape_kv).astype(dtype), requires_grad=grad)
    return q, k, v


def _materialised(q, k, v, **kw):
    """The same call forced onto the materialised path (the mask-gradient route)."""
    L, S = q.shape[-2], k.shape[-2]
    zero_mask = tinyattn.zeros(L, S, dtype=q.dtype, requires_grad=True)
    if kw.pop("is_causal", False):
        zero_mask = zero_mask + tinyattn.triu(tinyattn.full((L, S), float("-inf")), 1).to(q.dtype)
    return sdpa(q, k, v, attn_mask=zero_mask, **kw)


@pytest.mark.parametrize(
    "shape_q, shape_kv, kw",
    [
        ((2, 3, 5, 4), (2, 3, 7, 4), {}),
        ((2, 3, 5, 4), (2, 3, 7, 4), {"is_causal": True}),
        ((2, 6, 4), (2, 6, 4), {"is_causal": True}),
        ((1, 4, 3, 8), (1, 2, 9, 8), {"enable_gqa": True}),
        ((2, 2, 1, 3), (2, 2, 1, 3), {"scale": 0.3}),
    ],
)
def test_fused_and_materialised_paths_agree(shape_q, shape_kv, kw):
    q, k, v = _qkv(shape_q, shape_kv)
    out = sdpa(q, k, v, **kw)
    assert out.grad_fn.fused is not None, "expected the fused kernel path"
    g = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(tinyattn.tensor(g))
    grads = [t.grad.numpy().copy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    ref = _materialised(q, k, v, **{key: val for key, val in kw.items()})
    assert ref.grad_fn.fused is None
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    ref.backward(tinyattn.tensor(g))
    for got, t in zip(grads, (q, k, v)):
        np.testing.assert_allclose(got, t.grad.numpy(), atol=1e-11)


def test_layouts_that_stay_materialised():
    q, k, v = _qkv((2, 3, 5, 4), (1, 3, 7, 4))  # batch dims broadcast
    assert sdpa(q, k, v).grad_fn.fused is None
    q, k, v = _qkv((2, 1, 3, 5, 4), (2, 1, 3, 7, 4))  # 5-D
    assert sdpa(q, k, v).grad_fn.fused is None
    q, k, v = _qkv((2, 3, 5, 4), (2, 3, 7, 4))
    assert sdpa(q, k, v, attn_mask=tinyattn.zeros(5, 7, dtype=tinyattn.float64)).grad_fn.fused
    mask = tinyattn.zeros(2, 1, 5, 7, dtype=tinyattn.float64, requires_grad=True)
    assert sdpa(q, k, v, attn_mask=mask).grad_fn.fused is None  # the mask wants dS
    assert _fused_layout(q._data, k._data, v._data, np.zeros((3, 2, 5, 7)), 1, ()) is None


def test_fully_masked_rows_on_the_fused_path_give_zeros_and_finite_grads():
    q, k, v = _qkv((1, 2, 3, 4), (1, 2, 5, 4))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # query row 1 sees no key
    out = sdpa(q, k, v, attn_mask=tinyattn.tensor(mask))
    assert out.grad_fn.fused is not None
    assert np.all(out.detach().numpy()[:, :, 1] == 0)
    out.sum().backward()
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad.numpy()))
    assert np.all(q.grad.numpy()[:, :, 1] == 0)


def test_fused_dropout_is_seeded_and_its_backward_matches_finite_differences():
    q, k, v = _qkv((1, 2, 4, 3), (1, 2, 6, 3))

    def f(lib, q, k, v):
        lib.manual_seed(7)  # the dropout seed is drawn from tinyattn's generator
        return sdpa(q, k, v, dropout_p=0.4)

    a, b = f(tinyattn, q, k, v), f(tinyattn, q, k, v)
    assert a.grad_fn.fused is not None
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    tinyattn.manual_seed(8)
    c = sdpa(q, k, v, dropout_p=0.4)
    assert not np.array_equal(a.detach().numpy(), c.detach().numpy())
    run_gradcheck(f, q.detach().numpy(), k.detach().numpy(), v.detach().numpy())


def test_in_place_change_of_the_output_is_caught_before_backward():
    q, k, v = _qkv((1, 1, 3, 2), (1, 1, 4, 2))
    out = sdpa(q, k, v)
    out.add_(1.0)  # the fused backward reads the output it saved
    with pytest.raises(RuntimeError, match="ScaledDotProductAttentionBackward0"):
        out.sum().backward()


def test_float16_goes_through_float32_kernels():
    q, k, v = _qkv((1, 2, 3, 4), (1, 2, 5, 4), dtype=np.float16)
    out = sdpa(q, k, v)
    assert out.dtype == tinyattn.float16 and out.grad_fn.fused is not None
    ref = sdpa(*(t.detach().float() for t in (q, k, v)))
    np.testing.assert_allclose(out.detach().float().numpy(), ref.numpy(), atol=2e-3)
    out.float().sum().backward()
    assert q.grad.dtype == tinyattn.float16


def test_mha_weights_path_gradcheck_and_torch_parity():
    """need_weights=True materialises the weights (AttentionWeights): every input,
    the float mask included, gets finite-difference-checked and torch-matched gradients."""
    from harness import check_op

    rng = np.random.default_rng(3)
    L, S, N, E, H = 3, 4, 2, 4, 2
    query, key = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E))
    in_w, in_b = rng.standard_normal((3 * E, E)) * 0.5, rng.standard_normal(3 * E) * 0.1
    out_w, out_b = rng.standard_normal((E, E)) * 0.5, rng.standard_normal(E) * 0.1
    mask = rng.standard_normal((L, S)) * 0.3

    def f(lib, query, key, in_w, in_b, out_w, out_b, mask):
        return lib.nn.functional.multi_head_attention_forward(
            query,
            key,
            key,
            E,
            H,
            in_w,
            in_b,
            None,
            None,
            False,
            0.0,
            out_w,
            out_b,
            training=False,
            need_weights=True,
            attn_mask=mask,
            average_attn_weights=False,
        )

    check_op(f, query, key, in_w, in_b, out_w, out_b, mask)


@pytest.mark.parametrize("attn_mask_grad", [False, True])
def test_backward_frees_the_attention_arrays_unless_retain_graph(attn_mask_grad):
    q, k, v = _qkv((1, 2, 3, 4), (1, 2, 5, 4))
    mask = tinyattn.zeros(3, 5, dtype=tinyattn.float64, requires_grad=attn_mask_grad)
    out = sdpa(q, k, v, attn_mask=mask)
    node = out.grad_fn
    kept = "weights" if attn_mask_grad else "logsumexp"  # stored-weights / fused path
    out.sum().backward(retain_graph=True)
    assert kept in node.__dict__  # kept for a second backward
    out.sum().backward()
    assert kept not in node.__dict__  # freed
    with pytest.raises(RuntimeError, match="second time"):
        out.sum().backward()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("layout", ["BHLD", "BLD"])
def test_in_place_change_of_a_float_mask_is_caught_at_backward(backend, layout, monkeypatch):
    """The fused backward recomputes the scores from the mask: an edited mask would give
    wrong gradients, so the mask is saved (version-checked) and the edit raises."""
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    shape_q, shape_kv = ((1, 2, 3, 4), (1, 2, 5, 4)) if layout == "BHLD" else ((2, 3, 4), (2, 5, 4))
    q, k, v = _qkv(shape_q, shape_kv)
    mask = tinyattn.zeros(3, 5, dtype=tinyattn.float64)
    out = sdpa(q, k, v, attn_mask=mask[None] if layout == "BLD" else mask)  # a view too
    assert out.grad_fn.fused == layout
    mask.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_stored_weights_backward_does_not_read_the_mask():
    """The stored-weights backward uses the weights, not the mask: editing the mask
    after forward leaves the gradients exact (nothing to detect)."""
    q, k, v = _qkv((2, 3, 5, 4), (1, 3, 7, 4))  # broadcast: stored-weights path
    mask = tinyattn.tensor(np.random.default_rng(2).standard_normal((5, 7)))
    out = sdpa(q, k, v, attn_mask=mask)
    assert out.grad_fn.fused is None
    out.sum().backward()
    expected = [t.grad.numpy().copy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out = sdpa(q, k, v, attn_mask=mask)
    mask.mul_(3.0)
    out.sum().backward()
    for e, t in zip(expected, (q, k, v)):
        np.testing.assert_array_equal(e, t.grad.numpy())
