"""SDPA backend switches: sdpa_kernel / sdp_kernel choose the fused (flash) or math path."""

import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn.backends import cuda
from tinyattn.kernels import sdp_switches
from tinyattn.nn.attention import SDPBackend, sdpa_kernel
from tinyattn.nn.functional import scaled_dot_product_attention as sdpa


def qkv(shape=(2, 3, 5, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [tinyattn.tensor(rng.standard_normal(shape), requires_grad=True) for _ in range(3)]


def math_reference(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def run(q, k, v):
    for t in (q, k, v):
        t.grad = None
    out = sdpa(q, k, v)
    out.backward(tinyattn.ones(*out.shape, dtype=out.dtype))
    return out, [t.grad.numpy() for t in (q, k, v)]


def test_default_takes_the_fused_path_and_math_only_the_math_path():
    q, k, v = qkv()
    fused, fused_grads = run(q, k, v)
    assert fused.grad_fn.fused == "BHLD"
    with sdpa_kernel(SDPBackend.MATH):
        math, math_grads = run(q, k, v)
        assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    assert math.grad_fn.fused is None
    assert cuda.flash_sdp_enabled()  # restored
    expected = math_reference(*(t.detach().numpy() for t in (q, k, v)))
    np.testing.assert_allclose(math.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fused.detach().numpy(), expected, rtol=1e-10, atol=1e-12)
    for a, b in zip(math_grads, fused_grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_deprecated_sdp_kernel_warns_and_selects_math():
    q, k, v = qkv()
    with pytest.warns(FutureWarning, match=r"`torch.backends.cuda.sdp_kernel\(\)` is deprecated"):
        block = cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False)
    with block:
        out = sdpa(q, k, v)
        assert not cuda.mem_efficient_sdp_enabled() and cuda.cudnn_sdp_enabled()
    assert out.grad_fn.fused is None
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()


def test_no_enabled_backend_raises_torchs_errors():
    q, k, v = qkv()
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        with pytest.raises(
            RuntimeError, match="No viable backend for scaled_dot_product_attention"
        ):
            sdpa(q, k, v)
    q2, k2, v2 = (t.detach()[0, 0] for t in (q, k, v))  # 2-D: the fused kernels cannot take it
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert sdpa(q, k, v).grad_fn.fused == "BHLD"
        with pytest.warns(UserWarning, match="Flash attention kernel not used because"):
            with pytest.raises(RuntimeError, match=r"No available kernel\.  Aborting execution\."):
                sdpa(q2, k2, v2)
    assert tuple(sdpa(q2, k2, v2).shape) == (5, 4)  # all enabled again: the math path runs it


def test_switches_are_restored_after_an_error():
    with pytest.raises(ValueError), sdpa_kernel([SDPBackend.MATH]):
        raise ValueError
    assert sdp_switches.enabled_sdp_backends() == [
        SDPBackend.FLASH_ATTENTION,
        SDPBackend.EFFICIENT_ATTENTION,
        SDPBackend.MATH,
        SDPBackend.CUDNN_ATTENTION,
        SDPBackend.OVERRIDEABLE,
    ]


def test_set_priority_orders_the_enabled_backends():
    q, k, v = qkv()
    both = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]
    with sdpa_kernel(both, set_priority=True):
        assert sdpa(q, k, v).grad_fn.fused is None
        assert sdp_switches.enabled_sdp_backends() == both
    with sdpa_kernel(both):
        assert sdpa(q, k, v).grad_fn.fused == "BHLD"
    assert sdpa(q, k, v).grad_fn.fused == "BHLD"


def test_enable_flash_sdp_switch_is_read():
    q, k, v = qkv()
    cuda.enable_flash_sdp(False)
    try:
        assert sdpa(q, k, v).grad_fn.fused is None
    finally:
        cuda.enable_flash_sdp(True)
    assert sdpa(q, k, v).grad_fn.fused == "BHLD"


def test_bad_backend_argument():
    with pytest.raises(TypeError, match="argument 'backends' must be an SDPBackend"):
        with sdpa_kernel(["MATH"]):
            pass


def test_enum_matches_torch():
    assert cuda.SDPBackend is SDPBackend is tinyattn.backends.cuda.SDPBackend
    torch_attention = pytest.importorskip("torch.nn.attention")
    theirs = {name: b.value for name, b in torch_attention.SDPBackend.__members__.items()}
    assert {b.name: b.value for b in SDPBackend} == theirs


def test_math_path_matches_torch_math_path():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend as TorchBackend
    from torch.nn.attention import sdpa_kernel as torch_sdpa_kernel

    q, k, v = qkv((2, 2, 3, 6), seed=3)
    with sdpa_kernel(SDPBackend.MATH):
        ours, our_grads = run(q, k, v)
    tq, tk, tv = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (q, k, v))
    with warnings.catch_warnings(), torch_sdpa_kernel(TorchBackend.MATH):
        theirs = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    theirs.sum().backward()
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12
    )
    for a, t in zip(our_grads, (tq, tk, tv)):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-9, atol=1e-12)
