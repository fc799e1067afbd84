"""The nodes of in-place writes through views, ``CopySlices`` and ``AsStrided``, as ops.

They are ``Function`` subclasses like every op, so they are gradchecked and
compared with torch like every op (``tests/test_registry.py`` asks for both).
"""

import numpy as np
from harness import check_op, rand

import tinyattn as T
from tinyattn.ops.inplace import AsStrided, CopySlices


def _write_through_views(L, x, y):
    b = x * 1
    before = b[:3]  # made before the write: its node is re-derived (AsStrided)
    b[1:].mul_(y)  # CopySlices on b
    return b * 2, before.sin()


def _write_through_transposed_view(L, x, y):
    b = x + 1
    b.t()[1].add_(y, alpha=0.5)  # a strided column of b
    return b


def test_copyslices_and_as_strided_gradcheck_and_torch_parity():
    check_op(_write_through_views, rand(4, seed=1), rand(3, seed=2))
    check_op(_write_through_transposed_view, rand(3, 2, seed=3), rand(3, seed=4))


def test_the_nodes_are_recorded_as_functions():
    x = T.ones(4, requires_grad=True)
    b = x * 1
    view = b[1:]
    view.mul_(2)
    assert b.grad_fn.fn is CopySlices and b.grad_fn.name() == "CopySlices"
    assert view.grad_fn.fn is AsStrided and view.grad_fn.name() == "AsStridedBackward0"
    assert view.grad_fn.next_nodes == (b.grad_fn,)
    b.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 2.0, 2.0])
