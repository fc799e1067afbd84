"""nn.MultiheadAttention: torch parity for every option, masks, layouts, fully masked rows."""

import math

import numpy as np
import pytest
from _module_parity import module_parity
from harness import rand

import tinyattn
from tinyattn import nn
from tinyattn.nn.functional.mha import multi_head_attention_forward

torch = pytest.importorskip("torch")

L, S, N, E = 3, 4, 2, 4


def pair(*args, seed=0, **kwargs):
    torch.manual_seed(seed)
    return torch.nn.MultiheadAttention(*args, **kwargs), nn.MultiheadAttention(*args, **kwargs)


def inputs(batch_first=False, kdim=E, vdim=E, batched=True):
    def shape(length, dim):
        if not batched:
            return (length, dim)
        return (N, length, dim) if batch_first else (length, N, dim)

    return rand(*shape(L, E), seed=1), rand(*shape(S, kdim), seed=2), rand(*shape(S, vdim), seed=3)


def with_bias_values(module):
    """Give the zero-initialised biases values so their gradients are tested meaningfully."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "bias" in name:
                p.uniform_(-0.5, 0.5)
    return module


CONSTRUCTORS = [
    dict(),
    dict(bias=False),
    dict(add_bias_kv=True),
    dict(add_zero_attn=True),
    dict(add_bias_kv=True, add_zero_attn=True),
    dict(kdim=3, vdim=5),
    dict(kdim=3, vdim=5, bias=False, add_bias_kv=True),
    dict(batch_first=True),
]


@pytest.mark.parametrize("options", CONSTRUCTORS)
@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("need_weights", [True, False])
def test_constructor_options_parity(options, heads, need_weights):
    t, o = pair(E, heads, **options)
    with_bias_values(t)
    args = inputs(options.get("batch_first", False), options.get("kdim", E), options.get("vdim", E))
    module_parity(t, o, *args, need_weights=need_weights)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_dtype_mode_and_head_average(dtype, train, average):
    t, o = pair(E, 2, dropout=0.0)
    with_bias_values(t)
    module_parity(t, o, *inputs(), dtype=dtype, train=train, average_attn_weights=average)


def test_self_attention_same_tensor():
    t, o = pair(E, 2)
    x = rand(L, N, E, seed=4)
    module_parity(t, o, x, x, x)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
def test_unbatched(need_weights, batch_first):
    t, o = pair(E, 2, batch_first=batch_first, add_zero_attn=True)
    kpm = np.array([False, True, False, False])
    mask = rand(2, L, S, seed=9) > 0.3  # 3-D unbatched mask: (num_heads, L, S)
    mask[..., 0] = False
    module_parity(
        t,
        o,
        *inputs(batched=False),
        need_weights=need_weights,
        key_padding_mask=kpm,
        attn_mask=mask,
    )


def _masks(kind, heads):
    rng = np.random.default_rng(5)
    shape = (L, S) if kind.endswith("2d") else (N * heads, L, S)
    if kind.startswith("bool"):
        m = rng.random(shape) > 0.6
        m[..., 0] = False  # keep every row partly open (torch gives NaN on fully blocked rows)
        return m
    return rng.uniform(-2, 2, shape)


@pytest.mark.parametrize("kind", ["bool2d", "bool3d", "float2d", "float3d"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("options", [dict(), dict(add_bias_kv=True, add_zero_attn=True)])
def test_attn_mask_parity(kind, need_weights, options):
    t, o = pair(E, 2, **options)
    module_parity(t, o, *inputs(), attn_mask=_masks(kind, 2), need_weights=need_weights)


@pytest.mark.parametrize("float_kpm", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("options", [dict(), dict(add_bias_kv=True), dict(batch_first=True)])
def test_key_padding_mask_parity(float_kpm, need_weights, options):
    t, o = pair(E, 2, **options)
    kpm = np.array([[False, False, True, True], [False, True, False, False]])
    if float_kpm:
        kpm = np.where(kpm, -np.inf, 0.0)
    module_parity(
        t,
        o,
        *inputs(options.get("batch_first", False)),
        key_padding_mask=kpm,
        need_weights=need_weights,
    )
    attn_mask = _masks("bool2d", 2)
    if float_kpm:
        attn_mask = np.where(attn_mask, -np.inf, 0.0)  # torch wants matching mask types
    module_parity(
        t,
        o,
        *inputs(options.get("batch_first", False)),
        key_padding_mask=kpm,
        attn_mask=attn_mask,
        need_weights=need_weights,
    )


def test_attn_mask_3d_is_indexed_batch_times_heads_plus_head():
    _, o = pair(E, 2)
    o.double()
    q, k, v = (tinyattn.tensor(a) for a in inputs())
    mask = np.zeros((N * 2, L, S), dtype=bool)
    mask[1 * 2 + 0, :, 1:] = True  # batch 1, head 0 sees key 0 only
    _, w = o(q, k, v, attn_mask=tinyattn.tensor(mask), average_attn_weights=False)
    w = w.detach().numpy()
    np.testing.assert_allclose(w[1, 0, :, 0], 1.0)
    assert np.all(w[1, 0, :, 1:] == 0)
    assert np.all(w[0, 0] > 0) and np.all(w[1, 1] > 0)


def test_bool_mask_true_blocks():
    _, o = pair(E, 1)
    o.double()
    q, k, v = (tinyattn.tensor(a) for a in inputs())
    mask = np.zeros((L, S), dtype=bool)
    mask[:, 2] = True
    _, w = o(q, k, v, attn_mask=tinyattn.tensor(mask))
    assert np.all(w.detach().numpy()[..., 2] == 0)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1.0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_is_causal_without_mask_builds_the_causal_mask(need_weights):
    t, o = pair(E, 2)
    x = rand(L, N, E, seed=7)
    causal = ~np.tril(np.ones((L, L), dtype=bool))
    ref = module_parity(t, o, x, x, x, attn_mask=causal, need_weights=need_weights)
    q = tinyattn.tensor(x)
    out, _ = o(q, q, q, is_causal=True, need_weights=need_weights)
    np.testing.assert_array_equal(out.detach().numpy(), ref[0].detach().numpy())


def test_is_causal_with_a_mask_uses_the_mask():
    _, o = pair(E, 2)
    o.double()
    q, k, v = (tinyattn.tensor(a) for a in inputs())
    mask = tinyattn.tensor(_masks("float2d", 2))
    for need_weights in (True, False):
        a, _ = o(q, k, v, attn_mask=mask, is_causal=True, need_weights=need_weights)
        b, _ = o(q, k, v, attn_mask=mask, need_weights=need_weights)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# -- fully masked rows: zeros and finite gradients (torch: NaN with need_weights=True) -------
@pytest.mark.parametrize("need_weights", [True, False])
def test_fully_masked_rows_give_zeros_and_finite_grads(need_weights):
    t, o = pair(E, 2)
    with_bias_values(t)
    o.load_state_dict(t.state_dict())
    o.double()
    t.double()
    q, k, v = inputs()
    mask = np.zeros((L, S), dtype=bool)
    mask[1] = True  # query 1 is blocked from every key
    qo, ko, vo = (tinyattn.tensor(a, requires_grad=True) for a in (q, k, v))
    out, w = o(qo, ko, vo, attn_mask=tinyattn.tensor(mask), need_weights=need_weights)
    # attention output 0 -> the layer returns out_proj.bias for that query
    np.testing.assert_allclose(
        out.detach().numpy()[1], np.broadcast_to(o.out_proj.bias.detach().numpy(), (N, E))
    )
    if need_weights:
        assert np.all(w.detach().numpy()[:, 1] == 0)
    (out.sum() + (w.sum() if w is not None else 0)).backward()
    for x in (qo, ko, vo, *o.parameters()):
        assert np.all(np.isfinite(x.grad.numpy()))
    assert np.all(qo.grad.numpy()[1] == 0)
    qt, kt, vt = (torch.tensor(a) for a in (q, k, v))
    out_t, _ = t(qt, kt, vt, attn_mask=torch.tensor(mask), need_weights=need_weights)
    rows = [0, 2]
    np.testing.assert_allclose(out.detach().numpy()[rows], out_t.detach().numpy()[rows], atol=1e-12)
    if need_weights:
        assert torch.isnan(out_t[1]).all()  # the documented difference


def test_fully_padded_batch_entry_with_key_padding_mask():
    _, o = pair(E, 2)
    o.double()
    qo, ko, vo = (tinyattn.tensor(a, requires_grad=True) for a in inputs())
    kpm = tinyattn.tensor(np.array([[True] * S, [False] * S]))
    out, w = o(qo, ko, vo, key_padding_mask=kpm)
    assert np.all(w.detach().numpy()[0] == 0)
    out.sum().backward()
    assert np.all(np.isfinite(ko.grad.numpy())) and np.all(ko.grad.numpy()[:, 0] == 0)


# -- errors ----------------------------------------------------------------------------------
def test_embed_dim_not_divisible():
    with pytest.raises(ValueError, match=r"embed_dim \(5\).*num_heads \(2\)"):
        nn.MultiheadAttention(5, 2)


@pytest.mark.parametrize("shape", [(L, S + 1), (N, L, S), (1, L, S), (L, S, 1, 1)])
def test_bad_attn_mask_shape_lists_both_accepted_shapes(shape):
    _, o = pair(E, 2)
    q, k, v = (tinyattn.tensor(a.astype(np.float32)) for a in inputs())
    with pytest.raises(
        ValueError, match=r"\(L, S\) = \(3, 4\).*\(N\*num_heads, L, S\) = \(4, 3, 4\)"
    ):
        o(q, k, v, attn_mask=tinyattn.zeros(*shape, dtype=tinyattn.bool))


def test_bad_key_padding_mask_shape():
    _, o = pair(E, 2)
    q, k, v = (tinyattn.tensor(a.astype(np.float32)) for a in inputs())
    with pytest.raises(ValueError, match=r"\(N, S\) = \(2, 4\)"):
        o(q, k, v, key_padding_mask=tinyattn.zeros(N, S + 1, dtype=tinyattn.bool))


@pytest.mark.parametrize("which", ["attn_mask", "key_padding_mask"])
def test_integer_masks_raise_type_error_with_polarity(which):
    _, o = pair(E, 2)
    q, k, v = (tinyattn.tensor(a.astype(np.float32)) for a in inputs())
    shape = (L, S) if which == "attn_mask" else (N, S)
    with pytest.raises(TypeError, match=rf"{which}.*int64.*BLOCKED"):
        o(q, k, v, **{which: tinyattn.zeros(*shape, dtype=tinyattn.int64)})


# -- parameters, init, dropout ---------------------------------------------------------------
@pytest.mark.parametrize("options", CONSTRUCTORS)
def test_parameter_names_and_shapes_match_torch(options):
    t, o = pair(6, 3, **options)
    shapes_t = {k: tuple(v.shape) for k, v in t.state_dict().items()}
    shapes_o = {k: tuple(v.shape) for k, v in o.state_dict().items()}
    assert list(shapes_o.items()) == list(shapes_t.items())
    assert type(o.out_proj).__name__ == "NonDynamicallyQuantizableLinear"


def test_init_distributions():
    o = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    w = o.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (64 + 192))  # xavier_uniform on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01
    assert not o.in_proj_bias.detach().numpy().any() and not o.out_proj.bias.detach().numpy().any()
    bk = o.bias_k.detach().numpy()  # xavier_normal on (1, 1, E): fan_in = fan_out = E
    assert bk.shape == (1, 1, 64) and 0.05 < bk.std() < 0.25
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    assert np.abs(sep.k_proj_weight.detach().numpy()).max() <= math.sqrt(6 / 11)


def test_dropout_weights_are_post_dropout_and_seeded():
    o = nn.MultiheadAttention(E, 2, dropout=0.5).double()
    q, k, v = (tinyattn.tensor(a) for a in inputs())
    tinyattn.manual_seed(1)
    out1, w1 = o(q, k, v, average_attn_weights=False)
    tinyattn.manual_seed(1)
    out2, w2 = o(q, k, v, average_attn_weights=False)
    np.testing.assert_array_equal(out1.detach().numpy(), out2.detach().numpy())
    w = w1.detach().numpy()
    assert (w == 0).any()
    assert not np.allclose(w.sum(-1), 1.0)  # post-dropout weights, rescaled by 1/(1-p)
    o.eval()
    _, w_eval = o(q, k, v)
    np.testing.assert_allclose(w_eval.detach().numpy().sum(-1), 1.0)
    o.train()
    tinyattn.manual_seed(1)
    a, _ = o(q, k, v, need_weights=False)
    tinyattn.manual_seed(2)
    b, _ = o(q, k, v, need_weights=False)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())


def test_functional_matches_module():
    t, o = pair(E, 2, add_zero_attn=True)
    o.double()
    q, k, v = (tinyattn.tensor(a) for a in inputs())
    a, wa = o(q, k, v)
    b, wb = multi_head_attention_forward(
        q,
        k,
        v,
        E,
        2,
        o.in_proj_weight,
        o.in_proj_bias,
        None,
        None,
        True,
        0.0,
        o.out_proj.weight,
        o.out_proj.bias,
    )
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(wa.detach().numpy(), wb.detach().numpy())


@pytest.mark.parametrize("need_weights", [True, False])
def test_float_attn_mask_gradient_matches_torch(need_weights):
    t, o = pair(E, 2)
    o.load_state_dict(t.state_dict())
    o.double()
    t.double()
    q, k, v = inputs()
    mask = _masks("float3d", 2)
    mo, mt = tinyattn.tensor(mask, requires_grad=True), torch.tensor(mask, requires_grad=True)
    qo, ko, vo = (tinyattn.tensor(a) for a in (q, k, v))
    qt, kt, vt = (torch.tensor(a) for a in (q, k, v))
    o(qo, ko, vo, attn_mask=mo, need_weights=need_weights)[0].pow(2).sum().backward()
    t(qt, kt, vt, attn_mask=mt, need_weights=need_weights)[0].pow(2).sum().backward()
    np.testing.assert_allclose(mo.grad.numpy(), mt.grad.numpy(), atol=1e-10, rtol=1e-10)


# -- in-place edits between forward and backward ----------------------------------------------
def test_in_place_change_of_the_float_attn_mask_is_caught_on_the_fused_path():
    o = nn.MultiheadAttention(E, 2, dtype=tinyattn.float64)
    q, k, v = (tinyattn.tensor(a, requires_grad=True) for a in inputs())
    mask = tinyattn.tensor(rand(L, S, seed=5))
    out, _ = o(q, k, v, attn_mask=mask, need_weights=False)
    mask.add_(1.0)  # the fused backward would recompute the scores from the edited mask
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_returned_weights_backward_does_not_read_the_mask():
    o = nn.MultiheadAttention(E, 2, dtype=tinyattn.float64)
    q, k, v = (tinyattn.tensor(a, requires_grad=True) for a in inputs())
    mask = tinyattn.tensor(rand(L, S, seed=5))
    out, _ = o(q, k, v, attn_mask=mask)
    out.sum().backward()
    expected = [t.grad.numpy().copy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out, _ = o(q, k, v, attn_mask=mask)
    mask.mul_(3.0)
    out.sum().backward()
    for e, t in zip(expected, (q, k, v)):
        np.testing.assert_array_equal(e, t.grad.numpy())


# -- float16: computed in float32, cast back (torch runs it too) ------------------------------
@pytest.mark.parametrize("need_weights", [True, False])
def test_float16_multihead_attention_matches_torch(need_weights):
    t, o = pair(E, 2)
    with_bias_values(t)
    o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    t, o = t.half(), o.half()
    args = [a.astype(np.float16) for a in inputs()]
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    os_ = [tinyattn.tensor(a, requires_grad=True) for a in args]
    out_t, w_t = t(*ts, need_weights=need_weights)
    out_o, w_o = o(*os_, need_weights=need_weights)
    assert out_o.dtype == tinyattn.float16
    np.testing.assert_allclose(
        out_o.detach().float().numpy(), out_t.detach().float().numpy(), atol=3e-3
    )
    if need_weights:
        assert w_o.dtype == tinyattn.float16
        np.testing.assert_allclose(
            w_o.detach().float().numpy(), w_t.detach().float().numpy(), atol=2e-3
        )
    out_t.float().sum().backward()
    out_o.float().sum().backward()
    for a, b in zip(os_, ts):
        assert a.grad.dtype == tinyattn.float16
        np.testing.assert_allclose(a.grad.float().numpy(), b.grad.float().numpy(), atol=1e-2)


# -- second order (create_graph=True) ------------------------------------------------------
@pytest.mark.parametrize("need_weights", [False, True])
def test_second_order_matches_torch_math_path(need_weights):
    """Second derivatives through nn.MultiheadAttention vs torch's math path (gradgradcheck
    too), once every op of the layer supports create_graph; until then the error names it."""
    import harness
    from torch.nn.attention import SDPBackend, sdpa_kernel

    t, o = pair(E, 2)
    with_bias_values(t.double())
    o.double().load_state_dict(t.state_dict())

    def f(lib, q, k, v):
        if lib is tinyattn:
            return o(q, k, v, need_weights=need_weights)[0]
        with sdpa_kernel(SDPBackend.MATH):
            return t(q, k, v, need_weights=need_weights)[0]

    q, k, v = inputs()
    if harness.supports_second_order(f, q, k, v):
        harness.check_op(f, q, k, v, parity_kw=dict(dtypes=(np.float64,)))
        return
    xs = [tinyattn.tensor(a, requires_grad=True) for a in (q, k, v)]
    with pytest.raises(RuntimeError, match="does not support create_graph=True yet"):
        grads = tinyattn.autograd.grad(f(tinyattn, *xs).sum(), xs, create_graph=True)
        tinyattn.autograd.grad(sum((g * g).sum() for g in grads), xs)


def test_key_padding_mask_is_checked_against_static_k_length():
    """With ``static_k``/``static_v`` the keys are static_k's S positions, so the key
    padding mask is (N, S) of those (torch accepts it; the key's length was used)."""
    E, H, L, N, S = 8, 2, 5, 3, 4
    rng = np.random.default_rng(0)
    tinyattn.manual_seed(0)
    mha = nn.MultiheadAttention(E, H).double()
    q = tinyattn.tensor(rng.standard_normal((L, N, E)))
    sk = tinyattn.tensor(rng.standard_normal((N * H, S, E // H)))
    sv = tinyattn.tensor(rng.standard_normal((N * H, S, E // H)))
    kpm = np.zeros((N, S), bool)
    kpm[0, 0] = True
    blocked = np.zeros((N * H, L, S))
    blocked[:H, :, 0] = -np.inf  # the same positions as an additive (N*H, L, S) mask

    def run(**masks):
        out, _ = multi_head_attention_forward(
            q, q, q, E, H, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
            mha.out_proj.weight, mha.out_proj.bias, training=False, static_k=sk,
            static_v=sv, **masks,
        )  # fmt: skip
        return out.detach().numpy()

    with_kpm = run(key_padding_mask=tinyattn.tensor(kpm))
    np.testing.assert_allclose(with_kpm, run(attn_mask=tinyattn.tensor(blocked)), rtol=1e-12)
    assert not np.allclose(with_kpm, run())
