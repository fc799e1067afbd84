"""Module backward hooks (full hooks, pre-hooks, the deprecated form, global hooks) and
``MultiheadAttention.merge_masks``: what hooks see and replace, against torch; order,
removal, errors; gradients unchanged by hooks that change nothing (gradcheck)."""

import warnings

import numpy as np
import pytest
from harness import torch

import tinyattn
import tinyattn.nn as nn
from tinyattn.nn.modules import module as module_mod

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")
RNG = np.random.default_rng(0)
A, C = RNG.standard_normal(2), RNG.standard_normal(4)
PER_HEAD = RNG.standard_normal((6, 5, 5)) > 0


def _arr(g):
    return None if g is None else g.detach().numpy().copy()


def _two_outputs(lib):
    """A module with a non-tensor argument, a tensor that needs no grad, an unused input."""

    class Two(lib.nn.Module):
        def forward(self, a, k, b, c):
            return a * 2 + b, a * k

    return Two()


def _record(lib, use_second: bool) -> list:
    m, seen = _two_outputs(lib), []
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", [_arr(g) for g in go])))
    m.register_full_backward_hook(
        lambda mod, gi, go: seen.append(("full", [_arr(g) for g in gi], [_arr(g) for g in go]))
    )
    a = lib.tensor(A, requires_grad=True)
    c = lib.tensor(C, requires_grad=True)
    o1, o2 = m(a, 3.0, lib.ones(2), c)
    loss = (o1 * lib.tensor([1.0, -2.0], dtype=o1.dtype)).sum() + (o2.sum() if use_second else 0)
    loss.backward()
    return seen


def _same(x, y) -> None:
    if isinstance(x, (list, tuple)):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            _same(u, v)
    elif isinstance(x, np.ndarray):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    else:
        assert x == y


@needs_torch
@pytest.mark.parametrize("use_second", [False, True])
def test_hooks_see_torchs_grad_input_and_grad_output(use_second):
    mine, theirs = _record(tinyattn, use_second), _record(torch, use_second)
    assert [s[0] for s in mine] == ["pre", "full"]
    _same(mine, theirs)


def test_grad_input_has_one_entry_per_positional_argument():
    (_, go), (_, gi, go2) = _record(tinyattn, use_second=False)
    assert gi[1] is None  # the float argument
    np.testing.assert_array_equal(gi[2], np.zeros(2))  # a tensor that needs no grad
    np.testing.assert_array_equal(gi[3], np.zeros(4))  # an input forward did not use
    assert go[1] is None and go2[1] is None  # an output that got no gradient


def _replaced(lib, double_input: bool) -> tuple:
    lin = lib.nn.Linear(2, 3)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.arange(6.0).reshape(3, 2) / 7, dtype=lin.weight.dtype))
        lin.bias.zero_()
    if double_input:
        lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2,))
    else:
        lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x = lib.tensor(A.reshape(1, 2), dtype=lib.float32, requires_grad=True)
    lin(x).sum().backward()
    return _arr(x.grad), _arr(lin.weight.grad)


@pytest.mark.parametrize("double_input", [False, True])
def test_replacements_flow_on(double_input):
    x_grad, w_grad = _replaced(tinyattn, double_input)
    plain_x = np.arange(6.0).reshape(3, 2).sum(0) / 7
    factor = 2 if double_input else 3
    np.testing.assert_allclose(x_grad[0], factor * plain_x, rtol=1e-6)
    np.testing.assert_allclose(w_grad, (1 if double_input else 3) * np.tile(A, (3, 1)), rtol=1e-6)
    if torch is not None:
        _same(list(_replaced(torch, double_input)), [x_grad, w_grad])


def _order(lib) -> list:
    lin, calls = lib.nn.Linear(2, 2), []
    for name, prepend in [("a", False), ("b", True), ("c", False)]:
        lin.register_full_backward_hook(lambda *_, n=name: calls.append(n), prepend=prepend)
        lin.register_full_backward_pre_hook(lambda *_, n=name: calls.append("pre" + n), prepend)
    lin(lib.ones(1, 2, requires_grad=True)).sum().backward()
    return calls


def test_prepend_puts_a_hook_first():
    assert _order(tinyattn) == ["preb", "prea", "prec", "b", "a", "c"]
    if torch is not None:
        assert _order(torch) == _order(tinyattn)


def test_removed_hooks_are_not_called_and_global_hooks_run_first():
    lin, calls = nn.Linear(2, 2), []
    handle = lin.register_full_backward_hook(lambda *_: calls.append("own"))
    with module_mod.register_module_full_backward_hook(lambda m, gi, go: calls.append("all")):
        with module_mod.register_module_full_backward_pre_hook(lambda m, go: calls.append("pre")):
            lin(tinyattn.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == ["pre", "all", "own"]
    handle.remove()
    lin(tinyattn.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == ["pre", "all", "own"]
    assert not lin._backward_hooks and not module_mod.any_global_backward_hooks()


def test_called_once_per_backward_when_all_grads_are_ready():
    class Twice(nn.Module):
        def forward(self, x, y):
            return x * y + x.exp(), (x * 3).sum()

    m, calls = Twice(), []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append([_arr(g) for g in gi]))
    x, y = tinyattn.tensor(A, requires_grad=True), tinyattn.tensor(C[:2], requires_grad=True)
    out, total = m(x, y)
    (out.sum() + total).backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0][0], C[:2] + np.exp(A) + 3, rtol=1e-6)
    np.testing.assert_allclose(calls[0][1], A, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), calls[0][0], rtol=1e-6)


def test_no_input_requiring_grad_fires_from_the_outputs():
    lin, seen = nn.Linear(2, 2), []
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, _arr(go[0]))))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(tinyattn.ones(1, 2)).sum().backward()
    assert seen[0][0] == (None,)
    np.testing.assert_array_equal(seen[0][1], np.ones((1, 2)))
    lin.register_full_backward_hook(lambda mod, gi, go: (tinyattn.ones(1, 2),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="no input requires gradient"):
            lin(tinyattn.ones(1, 2)).sum().backward()


def test_output_of_other_kinds_warns_and_gets_no_hook():
    class Dict(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    m, calls = Dict(), []
    m.register_full_backward_hook(lambda *_: calls.append(1))
    with pytest.warns(UserWarning, match="Tensor or a tuple of Tensors"):
        out = m(tinyattn.ones(2, requires_grad=True))
    out["y"].sum().backward()
    assert calls == []


@pytest.mark.parametrize(
    "kind, result, match",
    [
        ("full", lambda gi: (gi[0], gi[0]), "invalid number of grad_input, got 2, but expected 1"),
        ("full", lambda gi: (tinyattn.ones(3),), "has changed the size of value"),
        ("full", lambda gi: ("g",), "returned str in its new grad_input"),
        ("pre", lambda go: (go[0], go[0]), "invalid number of grad_output, got 2, but expected 1"),
        ("pre", lambda go: 3, "must return None or a tuple of Tensors"),
        ("full", lambda gi: gi[0], "must return None or a tuple of Tensors"),
    ],
)
def test_bad_replacements_raise(kind, result, match):
    lin = nn.Linear(2, 2)
    if kind == "full":
        lin.register_full_backward_hook(lambda mod, gi, go: result(gi))
    else:
        lin.register_full_backward_pre_hook(lambda mod, go: result(go))
    with pytest.raises((RuntimeError, TypeError), match=match):
        lin(tinyattn.ones(1, 2, requires_grad=True)).sum().backward()


def _inplace_errors(lib) -> list:
    lin = lib.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda *_: None)
    relu = lib.nn.ReLU(inplace=True)
    relu.register_full_backward_hook(lambda *_: None)
    messages = []
    for step in (lambda: lin(lib.ones(1, 2, requires_grad=True)).add_(1),
                 lambda: relu(lib.ones(2, requires_grad=True) * 1)):  # fmt: skip
        with pytest.raises(RuntimeError, match="BackwardHookFunction is a view") as err:
            step()
        messages.append(str(err.value).split("view")[0][-38:])
    return messages


def test_in_place_change_of_outputs_or_inputs_raises_as_torchs():
    mine = _inplace_errors(tinyattn)
    if torch is not None:
        assert mine == _inplace_errors(torch)


def test_bad_registrations_raise():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="hook must be callable"):
        lin.register_full_backward_hook(3)
    lin.register_full_backward_hook(lambda *_: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        lin.register_backward_hook(lambda *_: None)


def test_deprecated_hook_is_called_as_a_full_hook_with_a_warning():
    lin, seen = nn.Linear(2, 2), []
    lin.register_backward_hook(lambda mod, gi, go: seen.append(len(gi)))
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        out = lin(tinyattn.ones(1, 2, requires_grad=True))
    out.sum().backward()
    assert seen == [1]


def test_hooks_that_change_nothing_leave_gradients_identical():
    seq = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = tinyattn.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    seq(x).pow(2).sum().backward()
    plain = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in seq.parameters()]
    seq.zero_grad()
    x.grad = None
    for layer in seq:
        layer.register_full_backward_hook(lambda mod, gi, go: None)
        layer.register_full_backward_pre_hook(lambda mod, go: go)
    seq(x).pow(2).sum().backward()
    hooked = [x.grad.numpy()] + [p.grad.numpy() for p in seq.parameters()]
    for u, v in zip(plain, hooked):
        np.testing.assert_array_equal(u, v)
    assert tinyattn.autograd.gradcheck(lambda t: seq(t), (x,))
    assert tinyattn.autograd.gradgradcheck(lambda t: seq(t), (x,))


# -- MultiheadAttention.merge_masks ----------------------------------------------------------
def _merge_cases(lib) -> list:
    mha = lib.nn.MultiheadAttention(4, 2, batch_first=True)
    q = lib.zeros(3, 5, 4)
    kpm = lib.tensor([[False] * 4 + [True]] * 3)
    square = lib.zeros(5, 5, dtype=lib.bool)
    square[0, 1] = True
    additive = lib.zeros(5, 5)
    additive[0, 1] = -1.0
    per_head = lib.tensor(PER_HEAD)
    cases = [(None, None), (None, kpm), (square, None), (square, kpm), (additive, kpm),
             (per_head, None), (per_head, kpm), (additive, kpm.float())]  # fmt: skip
    out = []
    for attn_mask, padding in cases:
        mask, kind = mha.merge_masks(attn_mask, padding, q)
        out.append(
            (None if mask is None else (mask.numpy().copy(), str(mask.dtype).split(".")[-1]), kind)
        )
    return out


def test_merge_masks_returns_the_mask_and_its_type():
    mine = _merge_cases(tinyattn)
    assert [kind for _, kind in mine] == [None, 1, 2, 2, 2, 2, 2, 2]
    assert mine[3][0][0].shape == (3, 2, 5, 5)
    assert mine[3][0][0][0, 0, 0].tolist() == [False, True, False, False, True]
    if torch is not None:
        theirs = _merge_cases(torch)
        for (m, k), (t, tk) in zip(mine, theirs):
            assert k == tk and (m is None) == (t is None)
            if m is not None:
                np.testing.assert_array_equal(m[0], t[0])
                assert m[1] == t[1]


def test_merge_masks_bad_shapes_name_the_argument():
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    q = tinyattn.zeros(3, 5, 4)
    with pytest.raises(RuntimeError, match=r"attn_mask must have shape \[5, 5\] or \[6, 5, 5\]"):
        mha.merge_masks(tinyattn.zeros(2, 2), None, q)
    with pytest.raises(RuntimeError, match=r"key_padding_mask must have shape \[3, 5\]"):
        mha.merge_masks(tinyattn.zeros(5, 5), tinyattn.zeros(3, 4), q)
    with pytest.raises(ValueError, match="query must be a 3-D tensor"):
        mha.merge_masks(tinyattn.zeros(5, 5), None, tinyattn.zeros(5, 4))


def test_a_module_pickled_without_backward_hook_stores_takes_hooks():
    lin = nn.Linear(2, 2)
    state = {k: v for k, v in lin.__getstate__().items() if "backward" not in k}
    old = nn.Linear.__new__(nn.Linear)
    old.__setstate__(state)
    calls = []
    old.register_full_backward_hook(lambda *_: calls.append(1))
    old(tinyattn.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == [1]


def test_under_no_grad_the_arguments_stay_writable():
    lin = nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda *_: None)
    h = tinyattn.ones(1, 2, requires_grad=True) * 2
    with tinyattn.no_grad():
        out = lin(h)
    h.add_(1)  # h is the caller's tensor, not a view made by the hooks
    out.add_(1)
    np.testing.assert_array_equal(h.detach().numpy(), [[3.0, 3.0]])
