"""scaled_dot_product_attention: gradcheck of the Function, torch parity, masks, GQA, dropout."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_gradgradcheck, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn
from tinyattn.nn.functional.attention import attention_weights, scaled_dot_product_attention


def sdpa(lib, *args, **kwargs):
    if lib is tinyattn:
        return scaled_dot_product_attention(*args, **kwargs)
    # torch's math path: its fused CPU kernels have no double backward (ours recomputes
    # the weights and runs the same math under create_graph)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return lib.nn.functional.scaled_dot_product_attention(*args, **kwargs)


def qkv(batch, L, S, E, Ev=None, seed=0):
    return (
        rand(*batch, L, E, seed=seed),
        rand(*batch, S, E, seed=seed + 1),
        rand(*batch, S, Ev or E, seed=seed + 2),
    )


@pytest.mark.parametrize("batch, L, S", [((2, 2), 3, 4), ((3,), 1, 2), ((), 4, 4), ((1, 2), 5, 3)])
def test_plain(batch, L, S):
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v), *qkv(batch, L, S, 3, 2))


@pytest.mark.parametrize("L, S", [(3, 3), (2, 5), (5, 2)])
def test_causal_upper_left(L, S):
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v, is_causal=True), *qkv((2,), L, S, 3))


def test_causal_is_tril_ones():
    q, k, v = (tinyattn.tensor(a) for a in qkv((1,), 2, 5, 3))
    mask = tinyattn.tensor(np.tril(np.ones((2, 5), dtype=bool)))
    a = scaled_dot_product_attention(q, k, v, is_causal=True)
    b = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bool_mask_true_takes_part_with_fully_masked_row():
    mask = np.random.default_rng(1).random((3, 4)) > 0.4
    mask[1] = False  # a fully blocked query row: output and gradients 0, as torch's SDPA
    mask[0, 0] = True
    q, k, v = qkv((2, 2), 3, 4, 3)
    check_op(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), q, k, v, mask)
    qt = tinyattn.tensor(q, requires_grad=True)
    kt = tinyattn.tensor(k, requires_grad=True)
    vt = tinyattn.tensor(v, requires_grad=True)
    out = scaled_dot_product_attention(qt, kt, vt, attn_mask=tinyattn.tensor(mask))
    assert np.all(out.detach().numpy()[..., 1, :] == 0)
    out.sum().backward()
    for t in (qt, kt, vt):
        assert np.all(np.isfinite(t.grad.numpy()))
    assert np.all(qt.grad.numpy()[..., 1, :] == 0)


def test_float_mask_is_added_and_gets_a_gradient():
    q, k, v = qkv((2,), 3, 4, 2)
    mask = rand(3, 4, seed=5)
    check_op(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), q, k, v, mask)


def test_float_mask_with_minus_inf_and_batched_mask():
    q, k, v = qkv((2, 2), 3, 4, 2)
    mask = rand(2, 1, 3, 4, seed=6)
    mask[0, 0, 2] = -np.inf  # fully blocked row in batch 0
    mask[1, 0, 0, 1] = -np.inf
    check_op(
        lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m),
        q,
        k,
        v,
        mask,
        grad=[True, True, True, False],
    )


def test_scale_and_value_dim():
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v, scale=0.7), *qkv((2,), 3, 2, 4, 3))


@pytest.mark.parametrize("hq, hk", [(4, 2), (3, 1), (2, 2)])
def test_gqa(hq, hk):
    q = rand(2, hq, 3, 2, seed=1)
    k, v = rand(2, hk, 4, 2, seed=2), rand(2, hk, 4, 3, seed=3)
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v, enable_gqa=True), q, k, v)


def test_gqa_with_causal():
    q, k, v = rand(1, 4, 3, 2, seed=1), rand(1, 2, 3, 2, seed=2), rand(1, 2, 3, 2, seed=3)
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v, is_causal=True, enable_gqa=True), q, k, v)


def test_head_mismatch_without_gqa_raises():
    q, k, v = (tinyattn.tensor(rand(1, s, 3, 2, seed=s)) for s in (4, 2, 2))
    with pytest.raises(ValueError, match="enable_gqa"):
        scaled_dot_product_attention(q, k, v)


@given(
    st.sampled_from(
        [((2, 1), (1, 3), (2, 3)), ((1,), (4,), (1,)), ((3, 2), (2,), (1, 2)), ((), (2,), ())]
    ),
    st.booleans(),
)
def test_leading_dims_broadcast(shapes, transposed):
    bq, bk, bv = shapes
    q, k, v = rand(*bq, 3, 2, seed=1), rand(*bk, 4, 2, seed=2), rand(*bv, 4, 2, seed=3)
    if transposed:  # non-contiguous inputs
        q = np.ascontiguousarray(np.swapaxes(q, -1, -2)).swapaxes(-1, -2)
        k = np.ascontiguousarray(np.swapaxes(k, -1, -2)).swapaxes(-1, -2)
    check_op(lambda lib, q, k, v: sdpa(lib, q, k, v), q, k, v)


def test_mask_and_causal_raises():
    q, k, v = (tinyattn.tensor(a) for a in qkv((1,), 2, 2, 2))
    with pytest.raises(ValueError, match="is_causal"):
        scaled_dot_product_attention(
            q, k, v, tinyattn.ones(2, 2, dtype=tinyattn.bool), is_causal=True
        )


def test_integer_mask_raises_type_error_with_polarity():
    q, k, v = (tinyattn.tensor(a) for a in qkv((1,), 2, 2, 2))
    with pytest.raises(TypeError, match=r"int64.*TAKES PART"):
        scaled_dot_product_attention(q, k, v, tinyattn.ones(2, 2, dtype=tinyattn.int64))


def test_bad_shapes_raise():
    q = tinyattn.tensor(rand(2, 3, 2))
    with pytest.raises(ValueError, match="embedding size"):
        scaled_dot_product_attention(
            q, tinyattn.tensor(rand(2, 3, 3)), tinyattn.tensor(rand(2, 3, 3))
        )
    with pytest.raises(ValueError, match="sequence length"):
        scaled_dot_product_attention(q, q, tinyattn.tensor(rand(2, 4, 2)))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\)"):
        scaled_dot_product_attention(q, q, q, tinyattn.ones(3, 4, dtype=tinyattn.bool))
    with pytest.raises(TypeError, match="same floating dtype"):
        scaled_dot_product_attention(q, q.float(), q)


def test_float16_is_computed_in_float32():
    q, k, v = qkv((2,), 3, 4, 2)
    h = [tinyattn.tensor(a.astype(np.float16)) for a in (q, k, v)]
    f = [tinyattn.tensor(a.astype(np.float16).astype(np.float32)) for a in (q, k, v)]
    out = scaled_dot_product_attention(*h)
    ref = scaled_dot_product_attention(*f)
    assert out.dtype == tinyattn.float16
    np.testing.assert_array_equal(out.numpy(), ref.numpy().astype(np.float16))
    hq = tinyattn.tensor(q.astype(np.float16), requires_grad=True)
    scaled_dot_product_attention(hq, h[1], h[2]).sum().backward()
    assert hq.grad.dtype == tinyattn.float16


# -- dropout ---------------------------------------------------------------------------------
def test_dropout_same_seed_same_result():
    q, k, v = (tinyattn.tensor(a) for a in qkv((2,), 3, 4, 2))
    tinyattn.manual_seed(3)
    a = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    b = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    tinyattn.manual_seed(3)
    c = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())


def test_dropout_gradient_uses_the_forward_keep_mask():
    def f(lib, q, k, v):
        lib.manual_seed(7)  # every evaluation draws the same keep-mask
        return scaled_dot_product_attention(q, k, v, dropout_p=0.4)

    run_gradcheck(f, *qkv((2,), 3, 4, 2))
    run_gradgradcheck(f, *qkv((2,), 3, 4, 2))  # create_graph replays the same keep mask


def test_dropout_statistics():
    # q = 0 makes every weight 1/S; v = I makes the output row equal the dropped weights row.
    S, p = 8, 0.3
    q = tinyattn.zeros(400, S, 2, dtype=tinyattn.float64)
    k = tinyattn.zeros(400, S, 2, dtype=tinyattn.float64)
    v = tinyattn.tensor(np.broadcast_to(np.eye(S), (400, S, S)).copy())
    out = scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    dropped = out == 0
    assert abs(dropped.mean() - p) < 0.02  # 25600 Bernoulli draws: std 0.003
    np.testing.assert_allclose(out[~dropped], 1 / S / (1 - p))
    assert abs(out.mean() - 1 / S) < 0.01  # unbiased in expectation
    assert np.all(scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0)


# -- second order (create_graph=True) ------------------------------------------------------
def _weights(lib, q, k, mask):
    if lib is tinyattn:
        return attention_weights(q, k, mask, 0.6)
    return lib.softmax(q @ k.transpose(-1, -2) * 0.6 + mask, dim=-1)


def test_attention_weights_op():
    """The returned-weights op (and the weights of every attention backward under create_graph)."""
    q, k, _ = qkv((2, 2), 3, 4, 3)
    check_op(_weights, q, k, rand(2, 1, 3, 4, seed=5))


@pytest.mark.parametrize("fused", [True, False])
def test_double_backward_matches_torch_math_path(fused):
    """Hessian-vector products through SDPA (fused or stored-weights forward) vs torch's math
    path, by a double backward and by autograd.grad of a gradient (check_op does both)."""
    q, k, v = qkv((2, 2), 3, 4, 3)
    mask = rand(3, 4, seed=7)
    grad = [True, True, True, not fused]  # a float mask that needs grad: stored weights
    check_op(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), q, k, v, mask, grad=grad)


def test_gradient_penalty_through_fused_attention():
    """A WGAN-GP style penalty: |d out / d q|^2 differentiated again, on the fused path."""
    q, k, v = (tinyattn.tensor(a, requires_grad=True) for a in qkv((1, 2), 4, 5, 3))
    out = scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.grad_fn.fused is not None
    (gq,) = tinyattn.autograd.grad(out.sum(), q, create_graph=True)
    (gq * gq).sum().backward()
    if torch is not None:
        tq, tk, tv = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (q, k, v))
        tout = sdpa(torch, tq, tk, tv, is_causal=True)
        (tgq,) = torch.autograd.grad(tout.sum(), tq, create_graph=True)
        (tgq * tgq).sum().backward()
        for ours, theirs in zip((q, k, v), (tq, tk, tv)):
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-10)
