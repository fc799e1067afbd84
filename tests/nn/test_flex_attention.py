"""tinyattn.nn.attention: flex_attention, create_block_mask / create_mask / BlockMask,
the mask combinators, sdpa_kernel and SDPBackend.

Forward values and logsumexp are compared with torch's flex_attention (which runs on
the CPU without gradients); gradients with finite differences, and with torch's math
composition of the same attention (torch's CPU flex_attention has no backward).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tinyattn.nn.attention import SDPBackend, sdpa_kernel
from tinyattn.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)

try:
    import torch
    import torch.nn.attention.flex_attention as torch_flex
except ImportError:  # parity tests skip; everything else runs
    torch = torch_flex = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed (parity test)")
B, H, L, S, E = 2, 2, 5, 7, 4


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def skip_first_query(b, h, q_idx, kv_idx):  # query 0 of batch 0 sees nothing
    return (q_idx > 0) | (b > 0)


def distance_bias(score, b, h, q_idx, kv_idx):
    return score - 0.25 * (q_idx - kv_idx) * (h + 1)


def _lib_module(lib):
    return tinyattn.nn.attention.flex_attention if lib is tinyattn else torch_flex


def _run_flex(lib, q, k, v, score_mod=None, mask_mod=None, enable_gqa=False, return_lse=False):
    mod = _lib_module(lib)
    block_mask = None
    if mask_mod is not None:
        block_mask = mod.create_block_mask(mask_mod, B, H, L, S, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch asks for torch.compile on the CPU
        return mod.flex_attention(
            q,
            k,
            v,
            score_mod=score_mod,
            block_mask=block_mask,
            enable_gqa=enable_gqa,
            return_lse=return_lse,
        )


CASES = [
    (None, None),
    (None, causal),
    (None, skip_first_query),
    (distance_bias, None),
    (distance_bias, causal),
    (distance_bias, skip_first_query),
]


@needs_torch
@pytest.mark.parametrize("score_mod, mask_mod", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_and_lse_match_torch_flex_attention(score_mod, mask_mod, dtype):
    q, k, v = rand(B, H, L, E, seed=1), rand(B, H, S, E, seed=2), rand(B, H, S, E, seed=3)
    ours = [tinyattn.tensor(x.astype(dtype)) for x in (q, k, v)]
    theirs = [torch.tensor(x.astype(dtype)) for x in (q, k, v)]
    out, lse = _run_flex(tinyattn, *ours, score_mod, mask_mod, return_lse=True)
    out_t, lse_t = _run_flex(torch, *theirs, score_mod, mask_mod, return_lse=True)
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert out.dtype.name == dtype and lse.dtype.name == str(lse_t.dtype).split(".")[1]
    np.testing.assert_allclose(out.numpy(), out_t.numpy(), atol=tol, rtol=tol)
    np.testing.assert_allclose(lse.numpy(), lse_t.numpy(), atol=tol, rtol=tol)
    # the path without lse (the fused kernel when there is no score_mod) gives the same
    alone = _run_flex(tinyattn, *ours, score_mod, mask_mod)
    np.testing.assert_allclose(alone.numpy(), out_t.numpy(), atol=tol, rtol=tol)


def head_and_batch_mask(b, h, q_idx, kv_idx):  # head 1 sees nothing; batch 1 one key more
    return (h != 1) & (kv_idx <= q_idx + b)


@needs_torch
@pytest.mark.parametrize("bh", [(None, None), (None, H), (B, None), (1, 1)])
@pytest.mark.parametrize("score_mod", [None, distance_bias])
def test_block_mask_made_without_batch_or_heads_is_applied_per_batch_and_head(bh, score_mod):
    """torch calls mask_mod with the true b and h even when the block mask was made with
    B/H None (evaluated at b = h = 0); ours applied the b = 0, h = 0 mask to every batch and
    head (head 1 was not masked)."""
    q, k, v = rand(B, H, L, E, seed=4), rand(B, H, S, E, seed=5), rand(B, H, S, E, seed=6)
    outs = []
    for lib in (tinyattn, torch):
        mod = _lib_module(lib)
        block_mask = mod.create_block_mask(head_and_batch_mask, *bh, L, S, device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tensors = [lib.tensor(x) for x in (q, k, v)]
            outs.append(mod.flex_attention(*tensors, score_mod=score_mod, block_mask=block_mask))
    np.testing.assert_allclose(outs[0].numpy(), outs[1].numpy(), atol=1e-12, rtol=1e-12)
    assert not outs[0].numpy()[:, 1].any()  # head 1 fully masked: zeros


@needs_torch
@pytest.mark.parametrize("score_mod", [None, distance_bias])
def test_grouped_query_heads_match_torch(score_mod):
    q, k, v = rand(B, 4, L, E, seed=4), rand(B, 2, S, E, seed=5), rand(B, 2, S, E, seed=6)
    out = flex_attention(*map(tinyattn.tensor, (q, k, v)), score_mod=score_mod, enable_gqa=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch_flex.flex_attention(
            *map(torch.tensor, (q, k, v)), score_mod=score_mod, enable_gqa=True
        )
    np.testing.assert_allclose(out.numpy(), want.numpy(), atol=1e-12)


def _torch_math(q, k, v, score_mod, mask_mod):
    """torch's plain-ops attention with the same mods (rows here always keep a key)."""
    scores = q @ k.transpose(-2, -1) / E**0.5
    b, h = torch.arange(B).view(B, 1, 1, 1), torch.arange(H).view(1, H, 1, 1)
    qi, ki = torch.arange(L).view(1, 1, L, 1), torch.arange(S).view(1, 1, 1, S)
    if score_mod is not None:
        scores = score_mod(scores, b, h, qi, ki)
    if mask_mod is not None:
        scores = scores.masked_fill(~mask_mod(b, h, qi, ki), float("-inf"))
    return torch.softmax(scores, -1) @ v


@pytest.mark.parametrize("score_mod, mask_mod", [c for c in CASES if c[1] is not skip_first_query])
def test_gradients_finite_differences_and_torch(score_mod, mask_mod):
    def f(lib, q, k, v):
        if lib is tinyattn:
            return _run_flex(lib, q, k, v, score_mod, mask_mod)
        return _torch_math(q, k, v, score_mod, mask_mod)

    check_op(f, rand(B, H, L, E, seed=7), rand(B, H, S, E, seed=8), rand(B, H, S, E, seed=9))


def test_score_mod_table_gets_its_gradient():
    """A bias table read by score_mod (relative-position bias) is trained through it."""

    def f(lib, q, k, v, table):
        def bias(score, b, h, q_idx, kv_idx):
            return score + table[h, q_idx, kv_idx]

        if lib is tinyattn:
            return _run_flex(lib, q, k, v, bias, causal)
        return _torch_math(q, k, v, bias, causal)

    arrays = rand(B, H, L, E, seed=10), rand(B, H, S, E, seed=11), rand(B, H, S, E, seed=12)
    check_op(f, *arrays, rand(H, L, S, seed=13))


@pytest.mark.parametrize("score_mod", [None, distance_bias])
def test_fully_masked_row_gives_zero_output_lse_minus_inf_and_zero_gradients(score_mod):
    q, k, v = (
        tinyattn.tensor(rand(*shape, seed=i), requires_grad=True)
        for i, shape in enumerate([(B, H, L, E), (B, H, S, E), (B, H, S, E)])
    )
    block_mask = create_block_mask(skip_first_query, B, None, L, S)
    out, lse = flex_attention(q, k, v, score_mod, block_mask, return_lse=True)
    values, lse_values = out.detach().numpy(), lse.detach().numpy()
    assert np.all(values[0, :, 0] == 0) and np.all(np.isneginf(lse_values[0, :, 0]))
    assert np.isfinite(lse_values[1]).all()
    out.sum().backward()
    for x in (q, k, v):
        assert np.isfinite(x.grad.numpy()).all()
    assert np.all(q.grad.numpy()[0, :, 0] == 0)
    # the fused path (no score_mod, no lse) agrees
    plain = flex_attention(q, k, v, score_mod, block_mask)
    np.testing.assert_allclose(plain.detach().numpy(), out.detach().numpy(), atol=1e-12)


def test_aux_outputs():
    q, k, v = (
        tinyattn.tensor(rand(*s, seed=i)) for i, s in enumerate([(B, H, L, E)] + [(B, H, S, E)] * 2)
    )
    block_mask = create_block_mask(causal, None, None, L, S)
    out, aux = flex_attention(
        q, k, v, block_mask=block_mask, return_aux=AuxRequest(lse=True, max_scores=True)
    )
    out2, lse = flex_attention(q, k, v, block_mask=block_mask, return_lse=True)
    np.testing.assert_allclose(aux.lse.numpy(), lse.numpy())
    scores = (q @ k.transpose(-2, -1)).numpy() / 2.0
    scores[..., ~create_mask(causal, 1, 1, L, S).numpy()[0, 0]] = -np.inf
    np.testing.assert_allclose(aux.max_scores.numpy(), scores.max(-1))
    _, none = flex_attention(q, k, v, return_aux=AuxRequest())
    assert none.lse is None and none.max_scores is None


@needs_torch
@pytest.mark.parametrize("mask_mod", [causal, skip_first_query])
def test_masks_and_blocks_match_torch(mask_mod):
    mask = create_mask(mask_mod, B, H, L, S)
    want = torch_flex.create_mask(mask_mod, B, H, L, S, device="cpu")
    np.testing.assert_array_equal(mask.numpy(), want.numpy())
    # whole blocks only: torch counts a short last block as full-sized in sparsity()
    mine = create_block_mask(mask_mod, B, H, 256, 384, BLOCK_SIZE=128)
    theirs = torch_flex.create_block_mask(mask_mod, B, H, 256, 384, device="cpu")
    np.testing.assert_array_equal(mine.to_dense().numpy(), theirs.to_dense().numpy())
    assert mine.sparsity() == pytest.approx(theirs.sparsity())
    assert mine.shape == tuple(theirs.shape) and mine.BLOCK_SIZE == tuple(theirs.BLOCK_SIZE)
    assert mine.seq_lengths == tuple(theirs.seq_lengths) and mine.mask_mod is mask_mod


@needs_torch
def test_score_mod_as_mask_matches_torch():
    def no_future(score, b, h, q_idx, kv_idx):
        return tinyattn.where(q_idx >= kv_idx, score, -float("inf"))

    def no_future_torch(score, b, h, q_idx, kv_idx):
        return torch.where(q_idx >= kv_idx, score, -float("inf"))

    mask = create_mask(no_future, 1, 1, L, S)
    want = torch_flex.create_mask(no_future_torch, 1, 1, L, S, device="cpu")
    np.testing.assert_array_equal(mask.numpy(), want.numpy())


def test_block_mask_printout_and_broadcast_storage():
    block_mask = create_block_mask(causal, None, None, 300, 300)
    assert isinstance(block_mask, BlockMask) and block_mask.shape == (1, 1, 300, 300)
    assert repr(block_mask) == "BlockMask(shape=(1, 1, 300, 300), sparsity=33.33%)"
    assert str(block_mask).splitlines()[1:] == ["(0, 0)", "░░", "██░░", "████░░", ")"]
    per_batch = create_block_mask(skip_first_query, 3, 4, L, S)
    assert per_batch.mask.shape == (3, 4, L, S) and per_batch.mask.strides[1] == 0


def test_mask_combinators():
    first_half = lambda b, h, q_idx, kv_idx: kv_idx < 3  # noqa: E731
    both = create_mask(and_masks(causal, first_half), 1, 1, L, S).numpy()
    either = create_mask(or_masks(causal, first_half), 1, 1, L, S).numpy()
    c, f = create_mask(causal, 1, 1, L, S).numpy(), create_mask(first_half, 1, 1, L, S).numpy()
    np.testing.assert_array_equal(both, c & f)
    np.testing.assert_array_equal(either, c | f)
    assert create_mask(noop_mask, 2, 1, L, S).numpy().all()
    assert create_mask(and_masks(), 1, 1, 2, 2).numpy().all()
    assert not create_mask(or_masks(), 1, 1, 2, 2).numpy().any()


def test_bad_input_names_the_argument_and_shapes():
    q = tinyattn.tensor(rand(B, H, L, E, seed=1))
    k = tinyattn.tensor(rand(B, H, S, E, seed=2))
    with pytest.raises(ValueError, match=r"4-D .* query \(2, 5, 4\)"):
        flex_attention(q[0], k[0], k[0])
    with pytest.raises(ValueError, match="Hq=2 and Hkv=1. Try setting enable_gqa=True"):
        flex_attention(q, k[:, :1], k[:, :1])
    with pytest.raises(ValueError, match=r"share E.*key \(2, 2, 7, 3\)"):
        flex_attention(q, k[..., :3], k)
    with pytest.raises(ValueError, match=r"made for shape \(1, 1, 5, 6\).*\(2, 2, 5, 7\)"):
        flex_attention(q, k, k, block_mask=create_block_mask(causal, None, None, L, 6))
    with pytest.raises(TypeError, match="'block_mask' must be a BlockMask"):
        flex_attention(q, k, k, block_mask=create_mask(causal, 1, 1, L, S))
    with pytest.raises(ValueError, match=r"score_mod returned shape \(3,\)"):
        flex_attention(q, k, k, score_mod=lambda s, b, h, i, j: tinyattn.zeros(3))
    with pytest.raises(ValueError, match="return_lse or return_aux"):
        flex_attention(q, k, k, return_lse=True, return_aux=AuxRequest(lse=True))
    with pytest.raises(TypeError, match="'score_mod' must be callable"):
        flex_attention(q, k, k, score_mod=3)
    with pytest.raises(TypeError, match="must return bools"):
        create_block_mask(lambda b, h, i, j: i - j, None, None, L, S)
    with pytest.raises(ValueError, match="BLOCK_SIZE"):
        create_block_mask(causal, None, None, L, S, BLOCK_SIZE=0)
    with pytest.raises(TypeError, match="'Q_LEN' must be a non-negative int"):
        create_block_mask(causal, None, None, -1, S)
    with pytest.raises(ValueError, match=r"shape \(1, 1, 5, 3\), which does not broadcast"):
        create_block_mask(lambda b, h, i, j: j[..., :3] >= i, None, None, L, S)
    with pytest.raises(TypeError, match="argument 1 must be a mask_mod"):
        and_masks(causal, "causal")


def test_sdpa_kernel_records_the_choice_and_restores_it():
    cuda = tinyattn.backends.cuda
    q = tinyattn.tensor(rand(B, H, L, E, seed=1))
    before = tinyattn.nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    with sdpa_kernel([SDPBackend.MATH]):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        assert not cuda.mem_efficient_sdp_enabled()
        inside = tinyattn.nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    # MATH runs the stored-weights path instead of the fused kernel: equal to rounding.
    np.testing.assert_allclose(inside, before, rtol=1e-12, atol=1e-15)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled()
    with pytest.raises(TypeError, match="SDPBackend"), sdpa_kernel(["math"]):
        pass
    assert cuda.math_sdp_enabled()


@needs_torch
def test_torch_names_exist_with_the_same_members():
    assert [m.name for m in SDPBackend] == list(torch.nn.attention.SDPBackend.__members__)
    assert [m.value for m in SDPBackend] == [
        m.value for m in torch.nn.attention.SDPBackend.__members__.values()
    ]
    for name in ("flex_attention", "create_block_mask", "create_mask", "and_masks", "or_masks"):
        assert hasattr(tinyattn.nn.attention.flex_attention, name)
