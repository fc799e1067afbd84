"""``tinyattn.nested``: construction, padding, unbind and elementwise ops, against torch."""

from __future__ import annotations

import numpy as np
import pytest
from harness import torch

import tinyattn

LIBS = [tinyattn] + ([torch] if torch is not None else [])
each_lib = pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)


def _nt(lib, **kw):
    a = lib.arange(6.0).reshape(2, 3)
    b = lib.arange(3.0).reshape(1, 3) + 10
    return lib.nested.nested_tensor([a, b], **kw)


@each_lib
def test_structure_and_padding(lib):
    nt = _nt(lib)
    assert nt.is_nested and nt.dim() == 3 and nt.size(0) == 2 and nt.size(2) == 3
    assert [tuple(t.shape) for t in nt.unbind()] == [(2, 3), (1, 3)]
    with pytest.raises(RuntimeError):
        nt.size()
    padded = lib.nested.to_padded_tensor(nt, -1.0)
    assert padded.tolist() == [
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
        [[10.0, 11.0, 12.0], [-1.0, -1.0, -1.0]],
    ]
    assert tuple(nt.to_padded_tensor(0.0, (2, 3, 4)).shape) == (2, 3, 4)
    assert repr(nt).startswith("nested_tensor([\n  tensor(")


@each_lib
def test_elementwise_ops_per_component(lib):
    nt = _nt(lib)
    out = ((nt * 2 + 1) - nt).relu().to_padded_tensor(0.0)
    want = np.array([[[1, 2, 3], [4, 5, 6]], [[11, 12, 13], [0, 0, 0]]], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(out.tolist()), want)
    with pytest.raises(NotImplementedError):  # (a RuntimeError subclass, as torch raises)
        nt.sum()


@each_lib
def test_gradients_reach_the_components(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = lib.ones(1, 3, requires_grad=True)
    nt = lib.nested.as_nested_tensor([a, b])
    (nt * 3).to_padded_tensor(0.0).sum().backward()
    assert a.grad.tolist() == [[3.0] * 3] * 2 and b.grad.tolist() == [[3.0] * 3]
    copied = lib.nested.nested_tensor([a, b], requires_grad=True)
    assert copied.requires_grad and copied.unbind()[0] is not a


@each_lib
def test_components_must_share_their_dim(lib):
    with pytest.raises(RuntimeError, match="same dimension"):
        lib.nested.nested_tensor([lib.ones(2, 3), lib.ones(1, 3, 4)])
