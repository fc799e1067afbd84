"""Views made without a graph (no_grad, inference_mode, or an input that needs no gradient)
wrap the NumPy view directly: the same values, memory, base and version as through autograd."""

import numpy as np
import pytest

import tinyattn


def _views(x):
    """The views a decode step takes: split, view, transpose, reshape, narrow."""
    q, k, v = x.split(4, dim=2)
    return {
        "split": q,
        "view": k.view(2, 3, 2, 2),
        "transpose": v.view(2, 3, 2, 2).transpose(1, 2),
        "reshape": x.reshape(6, 12),
        "narrow": x.narrow(1, 1, 2),
    }


def _expected(a):
    q, k, v = np.split(a, 3, axis=2)
    return {
        "split": q,
        "view": k.reshape(2, 3, 2, 2),
        "transpose": v.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3),
        "reshape": a.reshape(6, 12),
        "narrow": a[:, 1:3],
    }


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "plain"])
def test_views_without_graph_share_memory_base_and_version(mode):
    a = np.arange(72, dtype=np.float32).reshape(2, 3, 12)
    x = tinyattn.tensor(a.copy(), requires_grad=mode != "plain")
    context = getattr(tinyattn, mode)() if mode != "plain" else tinyattn.no_grad()
    with context:
        views = _views(x)
    for name, view in views.items():
        np.testing.assert_array_equal(view.numpy(), _expected(a)[name], err_msg=name)
        assert view.grad_fn is None and not view.requires_grad, name
        assert view._base is x and view._version is x._version, name
        assert np.shares_memory(view._data, x._data), name
    before = x._version.value
    with tinyattn.no_grad():
        views["transpose"].mul_(2.0)  # a write through a view reaches the base
    assert x._version.value == before + 1
    np.testing.assert_array_equal(x.detach().numpy()[:, :, 8:], 2 * a[:, :, 8:])


def test_views_under_grad_still_record_their_backward():
    x = tinyattn.tensor(np.arange(72, dtype=np.float64).reshape(2, 3, 12), requires_grad=True)
    views = _views(x)
    assert all(v.grad_fn is not None for v in views.values())
    sum(v.sum() for v in views.values()).backward()
    expected = np.full((2, 3, 12), 2.0)  # split + view + transpose cover x once, reshape once
    expected[:, 1:3] += 1  # narrow
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_split_with_bad_sections_still_names_the_problem():
    x = tinyattn.zeros(2, 4)
    with tinyattn.no_grad(), pytest.raises(IndexError, match="length"):
        x.split([6, -2], dim=1)
    with tinyattn.no_grad(), pytest.raises(RuntimeError, match="sum exactly"):
        x.split([1, 2], dim=1)
    with tinyattn.no_grad(), pytest.raises(IndexError, match="dimension out of range"):
        x.transpose(0, 5)
