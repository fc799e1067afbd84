"""einops on tinyattn tensors: every einops function, forward and gradients, against torch
(gradcheck + parity through ``check_op``), einops-style attention, and the einops layers."""

import os
import subprocess
import sys

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity

import tinyattn

einops = pytest.importorskip("einops", reason="einops is not installed (pip install einops)")


@pytest.mark.parametrize(
    "pattern, shape, lengths",
    [
        ("b (h d) n -> b h n d", (2, 4, 3), dict(h=2)),
        ("a b c -> c (a b)", (2, 3, 4), {}),
        ("b ... c -> b c ...", (2, 3, 1, 4), {}),
        ("(a b) c -> a b c", (6, 2), dict(a=3)),
        ("a 1 b -> a b", (2, 1, 3), {}),
    ],
)
def test_rearrange(pattern, shape, lengths):
    check_op(lambda lib, x: einops.rearrange(x, pattern, **lengths), rand(*shape))


@pytest.mark.parametrize(
    "pattern, shape, lengths",
    [
        ("h w -> h w c", (2, 3), dict(c=3)),
        ("b n -> (b r) n", (2, 3), dict(r=2)),
        ("h w -> (h 2) (w 2)", (2, 3), {}),
        ("a b -> b 1 a", (2, 3), {}),
    ],
)
def test_repeat(pattern, shape, lengths):
    check_op(lambda lib, x: einops.repeat(x, pattern, **lengths), rand(*shape))


@pytest.mark.parametrize(
    "pattern, reduction",
    [
        ("b c h w -> b c", "mean"),
        ("b c h w -> c", "sum"),
        ("b c (h 2) (w 2) -> b c h w", "max"),
        ("b c h w -> b h w", "min"),
        ("b c h w -> b w", "prod"),
        ("b c h w -> b c () ()", "mean"),
    ],
)
def test_reduce(pattern, reduction):
    x = rand(2, 3, 4, 2, low=0.5, high=1.5, seed=1)  # distinct values: max/min are smooth
    check_op(lambda lib, x: einops.reduce(x, pattern, reduction), x)


@pytest.mark.parametrize("reduction", ["any", "all"])
def test_reduce_bool_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    mask = np.random.default_rng(0).random((3, 4, 5)) > 0.3
    ours = einops.reduce(tinyattn.tensor(mask), "a b c -> b", reduction)
    theirs = einops.reduce(torch.tensor(mask), "a b c -> b", reduction)
    assert ours.dtype == tinyattn.bool and ours.tolist() == theirs.tolist()


def test_reduce_mean_of_integers_is_refused_as_for_torch():
    with pytest.raises(NotImplementedError, match="non-floating"):
        einops.reduce(tinyattn.arange(6).reshape(2, 3), "a b -> a", "mean")


@pytest.mark.parametrize(
    "pattern, shapes",
    [
        ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]),
        ("i j, j -> i", [(3, 4), (4,)]),
        ("batch head, head -> batch", [(3, 2), (2,)]),
    ],
)
def test_einsum(pattern, shapes):
    arrays = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    check_op(lambda lib, *xs: einops.einsum(*xs, pattern), *arrays)


def test_pack_and_unpack():
    def pack_unpack(lib, x, y):
        packed, shapes = einops.pack([x, y], "b * c")
        assert [tuple(s) for s in shapes] == [(3,), (2, 2)]
        a, b = einops.unpack(packed * 2, shapes, "b * c")
        return packed, a, b

    check_op(pack_unpack, rand(2, 3, 4), rand(2, 2, 2, 4))


def _einops_attention(lib, q, k, v, heads=2):
    """Multi-head attention written with einops: split heads, score, softmax, mix, merge."""
    q, k, v = (einops.rearrange(t, "b n (h d) -> b h n d", h=heads) for t in (q, k, v))
    d = q.shape[-1]
    scores = einops.einsum(q, k, "b h i d, b h j d -> b h i j") / d**0.5
    weights = lib.softmax(scores, dim=-1)
    out = einops.einsum(weights, v, "b h i j, b h j d -> b h i d")
    return einops.rearrange(out, "b h n d -> b n (h d)")


def test_einops_attention_matches_torch():
    q, k, v = rand(2, 3, 8, seed=0), rand(2, 5, 8, seed=1), rand(2, 5, 8, seed=2)
    check_op(_einops_attention, q, k, v)


def test_einops_attention_equals_sdpa():
    q, k, v = (tinyattn.tensor(rand(2, 4, 6, seed=s)) for s in range(3))
    ours = _einops_attention(tinyattn, q, k, v, heads=3)
    split = [einops.rearrange(t, "b n (h d) -> b h n d", h=3) for t in (q, k, v)]
    sdpa = tinyattn.nn.functional.scaled_dot_product_attention(*split)
    np.testing.assert_allclose(
        ours.detach().numpy(), einops.rearrange(sdpa, "b h n d -> b n (h d)").numpy(), atol=1e-6
    )


def test_backend_is_tinyattn_and_parameters_work():
    from einops._backends import get_backend

    backend = get_backend(tinyattn.ones(1))
    assert backend.framework_name == "tinyattn"
    assert get_backend(tinyattn.nn.Parameter(tinyattn.ones(1))) is backend
    w = tinyattn.nn.Parameter(tinyattn.randn(2, 6))
    einops.rearrange(w, "a (b c) -> (a b) c", b=2).sum().backward()
    assert w.grad is not None and w.grad.tolist() == np.ones((2, 6)).tolist()


@pytest.mark.parametrize(
    "code",
    [
        "import tinyattn, einops",  # einops imported after tinyattn: the finder registers
        "import einops, tinyattn",  # einops first: registered at import tinyattn
        "import einops, einops.einops, tinyattn",
    ],
)
def test_registration_in_either_import_order(code):
    check = (
        f"{code}; import sys; "
        "y = einops.rearrange(tinyattn.ones(2, 3), 'a b -> b a'); "
        "assert type(y) is tinyattn.Tensor and tuple(y.shape) == (3, 2); "
        "assert not any(type(f).__name__ == '_RegisterAfterImport' for f in sys.meta_path); "
        "print('ok')"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=root)
    assert out.stdout.strip() == "ok", out.stderr


# -- layers -----------------------------------------------------------------------------------
def test_rearrange_and_reduce_layers_match_torch():
    pytest.importorskip("torch")
    from einops.layers import torch as torch_layers

    x = rand(2, 3, 4, 4, seed=3)
    for ours, theirs in (
        (
            tinyattn.nn.Rearrange("b c h w -> b (h w) c"),
            torch_layers.Rearrange("b c h w -> b (h w) c"),
        ),
        (
            tinyattn.nn.Reduce("b c (h 2) (w 2) -> b c h w", "max"),
            torch_layers.Reduce("b c (h 2) (w 2) -> b c h w", "max"),
        ),
    ):
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == []
        check_op(lambda lib, x, o=ours, t=theirs: (o if lib is tinyattn else t)(x), x)
    assert isinstance(tinyattn.nn.Rearrange("a b -> b a"), tinyattn.nn.Module)


def test_einmix_layer_matches_torch():
    torch = pytest.importorskip("torch")
    from einops.layers.torch import EinMix as TorchEinMix

    kw = dict(weight_shape="c h", bias_shape="h", c=4, h=3)
    ours = tinyattn.nn.EinMix("b t c -> b t h", **kw)
    theirs = TorchEinMix("b t c -> b t h", **kw).double()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict()) == ["bias", "weight"]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ours.double()
    x = rand(2, 5, 4, seed=4)
    run_gradcheck(lambda lib, x: ours(x), x)  # the input's gradient, in float64
    ours.zero_grad()
    run_parity(lambda lib, x: (ours if lib is tinyattn else theirs)(x), x, dtypes=(np.float64,))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), atol=1e-10)


def test_einmix_with_grouped_axes_trains():
    layer = tinyattn.nn.EinMix("b (t g) c -> b t (g h)", weight_shape="g c h", g=2, c=3, h=4)
    assert layer.bias is None and tuple(layer.weight.shape) == (2, 3, 4)
    out = layer(tinyattn.randn(5, 6, 3))
    assert tuple(out.shape) == (5, 3, 8)
    out.sum().backward()
    assert layer.weight.grad is not None
