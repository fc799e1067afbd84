"""F.embedding_bag and nn.EmbeddingBag against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand, run_gradcheck, run_gradgradcheck, run_parity
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 0, 2])
OFFSETS = np.array([0, 2, 2, 5])  # bags [1, 2], [], [4, 5, 4], [3, 2, 0, 2]


def _bag(mode, padding_idx=None, include_last_offset=False, offsets=OFFSETS, psw=False):
    def f(lib, weight, inp, off, *rest):
        return lib.nn.functional.embedding_bag(
            inp,
            weight,
            off,
            mode=mode,
            per_sample_weights=rest[0] if psw else None,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )

    return f


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_offsets(mode, padding_idx):
    check_op(_bag(mode, padding_idx), rand(6, 3, seed=1), INPUT, OFFSETS)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_include_last_offset(mode):
    off = np.array([0, 2, 2, 5, 9])  # 4 bags; the last offset is len(input), as torch documents
    check_op(_bag(mode, include_last_offset=True), rand(6, 3, seed=2), INPUT, off)


def test_embedding_bag_include_last_offset_short_of_the_end():
    """A last offset < len(input) ends the last bag there, as torch's float32 forward does
    (torch documents last offset == len(input); its float64 forward sums to the end of input
    and its backward reads uninitialised memory here, so only the float32 forward is compared)."""
    off = np.array([0, 2, 2, 5, 7])  # entries 7, 8 belong to no bag
    f = _bag("sum", include_last_offset=True)
    run_gradcheck(f, rand(6, 3, seed=2), INPUT, off)
    w = rand(6, 3, seed=2)
    out = f(tinyattn, tinyattn.tensor(w), tinyattn.tensor(INPUT), tinyattn.tensor(off))
    np.testing.assert_allclose(out.numpy()[3], w[[3, 2]].sum(0))
    ref = f(torch, torch.tensor(w, dtype=torch.float32), torch.tensor(INPUT), torch.tensor(off))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input(mode):
    inp = np.array([[1, 2, 4], [5, 4, 0]])
    check_op(_bag(mode, padding_idx=4), rand(6, 2, seed=3), inp, None)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_per_sample_weights(padding_idx):
    """torch has no double backward through per_sample_weights: second order is checked
    by finite differences only."""
    f = _bag("sum", padding_idx, psw=True)
    for args in (
        (rand(6, 3, seed=4), INPUT, OFFSETS, rand(9, seed=5)),
        (rand(6, 2, seed=6), INPUT.reshape(3, 3), None, rand(3, 3, seed=7)),
    ):
        run_gradcheck(f, *args)
        run_parity(f, *args)
        run_gradgradcheck(f, *args)


def test_embedding_bag_max_ties_send_the_gradient_to_the_first_maximum():
    w = np.array([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]])
    f = _bag("max", offsets=np.array([0]))  # (not differentiable at a tie: no gradcheck)
    run_parity(f, w, np.array([0, 1, 2]), np.array([0]))
    wt = tinyattn.tensor(w, requires_grad=True)
    f(tinyattn, wt, tinyattn.tensor([0, 1, 2]), tinyattn.tensor([0])).sum().backward()
    np.testing.assert_array_equal(wt.grad.numpy(), [[1, 0], [0, 1], [0, 0]])


def test_embedding_bag_empty_bags_are_zero():
    w = tinyattn.randn(4, 3, requires_grad=True)
    for mode in ("sum", "mean", "max"):
        out = tinyattn.nn.functional.embedding_bag(
            tinyattn.tensor([1, 1]), w, tinyattn.tensor([0, 0]), mode=mode, padding_idx=1
        )
        assert out.shape == (2, 3) and not out.detach().numpy().any()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "kw", [dict(), dict(mode="sum", padding_idx=0), dict(mode="max", include_last_offset=True)]
)
def test_embedding_bag_module_parity(dtype, kw):
    t = torch.nn.EmbeddingBag(6, 3, **kw)
    o = tinyattn.nn.EmbeddingBag(6, 3, **kw)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict()) == ["weight"]
    off = np.array([0, 2, 2, 5, 9]) if kw.get("include_last_offset") else OFFSETS
    module_parity(t, o, INPUT, off, dtype=dtype)
    module_parity(t, o, INPUT.reshape(3, 3), dtype=dtype)


def test_embedding_bag_init_and_from_pretrained():
    m = tinyattn.nn.EmbeddingBag(200, 8, padding_idx=3)
    w = m.weight.detach().numpy()
    assert w.shape == (200, 8) and not w[3].any()
    assert 0.8 < w.std() < 1.2  # N(0, 1) as torch
    emb = tinyattn.tensor(rand(5, 2, seed=8))
    frozen = tinyattn.nn.EmbeddingBag.from_pretrained(emb, mode="sum")
    assert not frozen.weight.requires_grad and frozen.mode == "sum"
    out = frozen(tinyattn.tensor([[0, 4]]))
    np.testing.assert_allclose(out.numpy(), emb.numpy()[[0, 4]].sum(0, keepdims=True))
    assert tinyattn.nn.EmbeddingBag.from_pretrained(emb, freeze=False).weight.requires_grad
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(emb.numpy()), mode="max")
    ours = tinyattn.nn.EmbeddingBag.from_pretrained(emb, mode="max")
    np.testing.assert_allclose(
        ours(tinyattn.tensor([1, 0, 3]), tinyattn.tensor([0, 1])).numpy(),
        ref(torch.tensor([1, 0, 3]), torch.tensor([0, 1])).numpy(),
    )


BAD = [
    (dict(offsets=[1, 2]), RuntimeError, "offsets\\[0\\] has to be 0.*got 1"),
    (dict(offsets=[0, 12]), RuntimeError, "greater than input's length 9 .* 12"),
    (dict(input=INPUT.reshape(3, 3)), ValueError, "2D, then offsets has to be None"),
    (dict(offsets=None), ValueError, "offsets has to be a 1D Tensor but got None"),
    (dict(offsets=[[0, 2]]), ValueError, r"offsets has to be a 1D Tensor.*\[1, 2\]"),
    (dict(mode="foo"), ValueError, "mode has to be one of sum, mean or max.*'foo'"),
    (dict(mode="mean", psw=np.ones(9)), NotImplementedError, "only supported for mode='sum'"),
    (dict(mode="sum", psw=np.ones(8)), ValueError, r"per_sample_weights.*\[8\].*\[9\]"),
    (dict(input=INPUT.astype(float)), RuntimeError, "integer indices .*'input'.*float64"),
    (dict(input=INPUT + 3), (IndexError, RuntimeError), r"index 8 .*valid range \[0, 6\)"),
    (dict(padding_idx=7), RuntimeError, "padding_idx must be within .* -6 through 5, but got 7"),
    (dict(input=INPUT.reshape(1, 1, 9), offsets=None), ValueError, "1D or 2D .* dimension 3"),
]


@pytest.mark.parametrize("kw,error,match", BAD)
def test_embedding_bag_bad_input(kw, error, match):
    def call(lib):
        kw2 = dict(mode="mean", padding_idx=None)
        kw2.update({k: v for k, v in kw.items() if k in ("mode", "padding_idx")})
        inp = kw.get("input", INPUT)
        off = kw.get("offsets", OFFSETS)
        psw = kw.get("psw")
        return lib.nn.functional.embedding_bag(
            lib.tensor(inp),
            lib.tensor(rand(6, 3, seed=9)),
            None if off is None else lib.tensor(np.asarray(off)),
            per_sample_weights=None if psw is None else lib.tensor(psw),
            **kw2,
        )

    with pytest.raises(error, match=match):
        call(tinyattn)
    with pytest.raises((RuntimeError, ValueError, IndexError, NotImplementedError)):
        call(torch)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_max_norm_renormalises_the_rows_named_first_as_torch(mode):
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((7, 4)) * 2
    idx, off = np.array([1, 2, 4, 1, 6, 0]), np.array([0, 2, 5])
    g = np.arange(12.0).reshape(3, 4)
    results = []
    for lib in (torch, tinyattn):
        w = lib.tensor(w0.copy(), requires_grad=True)
        out = lib.nn.functional.embedding_bag(
            lib.tensor(idx), w, lib.tensor(off), max_norm=1.5, mode=mode, padding_idx=6
        )
        (out * lib.tensor(g)).sum().backward()
        results.append([out.detach().numpy(), w.grad.numpy(), w.detach().numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    norms = np.linalg.norm(results[1][2][[0, 1, 2, 4, 6]], axis=1)
    assert norms.max() <= 1.5 + 1e-6  # every row named (padding's included) now within 1.5
    layer = tinyattn.nn.EmbeddingBag(7, 4, max_norm=0.5, mode=mode)
    layer(tinyattn.tensor(idx), tinyattn.tensor(off))
    assert (
        np.linalg.norm(layer.weight.detach().numpy()[[0, 1, 2, 4, 6]], axis=1).max() <= 0.5 + 1e-6
    )
