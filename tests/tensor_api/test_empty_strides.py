"""Zero-size tensors report torch's strides: C order with a size-0 dim counted as 1 at
creation (NumPy gives 0s), and views (transpose, step, expand ...) derived from those."""

import pytest
from harness import torch

import tinyattn

CASES = {
    "empty(0,3)": lambda L: L.empty(0, 3),
    "zeros(3,0)": lambda L: L.zeros(3, 0),
    "ones(2,0,4)": lambda L: L.ones(2, 0, 4),
    "empty(0)": lambda L: L.empty(0),
    "tensor([])": lambda L: L.tensor([]),
    "full(0,2,2)": lambda L: L.full((0, 2, 2), 1.0),
    "t": lambda L: L.zeros(0, 3).t(),
    "permute": lambda L: L.zeros(2, 0, 4).permute(2, 0, 1),
    "reshape(3,0)": lambda L: L.zeros(0, 3).reshape(3, 0),
    "reshape(0,1,3)": lambda L: L.zeros(0, 3).reshape(0, 1, 3),
    "view(-1)": lambda L: L.zeros(0, 3).view(-1),
    "flatten": lambda L: L.zeros(0, 3).flatten(),
    "expand": lambda L: L.zeros(0, 1).expand(0, 4),
    "step slice": lambda L: L.zeros(0, 6)[:, ::2],
    "slice of nonempty": lambda L: L.zeros(4, 3)[:0],
    "empty slice mid": lambda L: L.zeros(4, 3)[1:1],
    "column slice": lambda L: L.zeros(2, 3)[:, 3:],
    "unsqueeze": lambda L: L.zeros(0, 3).unsqueeze(1),
    "squeeze": lambda L: L.zeros(0, 3, 1).squeeze(-1),
    "elementwise": lambda L: L.zeros(0, 3) + 1,
    "contiguous of t": lambda L: L.zeros(0, 3).transpose(0, 1).contiguous(),
    "unfold": lambda L: L.zeros(0, 4).unfold(1, 2, 1),
    "narrow": lambda L: L.zeros(3, 0).narrow(0, 1, 2),
    "select": lambda L: L.zeros(0, 2, 3).select(1, 0),
    "cat": lambda L: L.cat([L.zeros(0, 3), L.zeros(0, 3)]),
    "clone": lambda L: L.zeros(0, 3).clone(),
    "matmul": lambda L: L.randn(0, 3) @ L.randn(3, 2),
    "sum keepdim": lambda L: L.zeros(0, 3).sum(0, keepdim=True)[:0],
}


@pytest.mark.skipif(torch is None, reason="torch parity")
@pytest.mark.parametrize("name", list(CASES))
def test_zero_size_strides_match_torch(name):
    ours, theirs = CASES[name](tinyattn), CASES[name](torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()


def test_creation_strides_without_torch():
    assert tinyattn.empty(0, 3).stride() == (3, 1)
    assert tinyattn.empty(2, 0, 4).stride() == (4, 4, 1)
    assert tinyattn.empty(0, 3).t().stride() == (1, 3)
    assert tinyattn.empty(0, 3).stride(0) == 3


def test_zero_size_tensors_still_behave():
    x = tinyattn.zeros(0, 3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.shape == (0, 3) and x.grad.stride() == (3, 1)
    y = tinyattn.zeros(0, 3)
    y.add_(1)
    y[:] = 5.0
    assert y.numpy().shape == (0, 3) and y.tolist() == []
