"""``F.ctc_loss`` as one op (``CtcLoss``): gradcheck and torch parity over its options,
edge cases (no alignment, repeats, empty targets, a label equal to blank), bad input,
and second derivatives against torch's autograd of the same recursion (torch's
``ctc_loss`` has no double backward)."""

from __future__ import annotations

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import rand, run_gradcheck, run_gradgradcheck, run_parity, run_parity2, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

X = rand(7, 3, 5, seed=40, low=-2, high=2)
TARGETS = np.array([[1, 2, 2], [3, 3, 0], [4, 1, 4]])  # (repeats: 2 2 and 3 3)
INPUT_LENGTHS, TARGET_LENGTHS = np.array([7, 5, 6]), np.array([3, 2, 3])


def _ctc(T, x, targets=TARGETS, il=INPUT_LENGTHS, tl=TARGET_LENGTHS, **kw):
    return T.nn.functional.ctc_loss(
        x.log_softmax(-1), T.tensor(targets), T.tensor(il), T.tensor(tl), **kw
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_gradcheck_and_parity(reduction, blank):
    targets = np.where(TARGETS == blank, 0, TARGETS) if blank else TARGETS  # (none is blank)
    f = lambda T, x: _ctc(T, x, targets, reduction=reduction, blank=blank)  # noqa: E731
    run_gradcheck(f, X)
    run_parity(f, X)


def test_ctc_gradient_beyond_input_length_is_zero():
    x = tinyattn.tensor(np.log(rand(7, 3, 5, seed=41, low=0.1, high=0.9)), requires_grad=True)
    tinyattn.nn.functional.ctc_loss(
        x, tinyattn.tensor(TARGETS), tinyattn.tensor(INPUT_LENGTHS), tinyattn.tensor([3, 2, 3])
    ).backward()
    grad = x.grad.numpy()
    assert (grad[5:, 1] == 0).all() and (grad[6:, 2] == 0).all()
    assert (np.abs(grad[:5, 1]).sum(1) > 0).all()


@pytest.mark.parametrize("lengths_as", ["tensor", "tuple", "list"])
def test_ctc_concatenated_targets_and_length_types(lengths_as):
    """1-D concatenated targets give the padded targets' values; lengths of any form."""
    flat = np.concatenate([row[:n] for row, n in zip(TARGETS, TARGET_LENGTHS)])

    def lengths(T, a):
        return (
            T.tensor(a)
            if lengths_as == "tensor"
            else (tuple if lengths_as == "tuple" else list)(a.tolist())
        )

    def f(T, x):
        return T.nn.functional.ctc_loss(
            x.log_softmax(2), T.tensor(flat), lengths(T, INPUT_LENGTHS), lengths(T, TARGET_LENGTHS),
            reduction="none",
        )  # fmt: skip

    run_gradcheck(f, X)
    run_parity(f, X)
    padded = _ctc(tinyattn, tinyattn.tensor(X), reduction="none").numpy()
    np.testing.assert_array_equal(f(tinyattn, tinyattn.tensor(X)).numpy(), padded)


def test_ctc_unbatched_float32_and_empty_target():
    run_parity(lambda T, x: _ctc(T, x, np.array([1, 1, 3]), 6, 3), X[:6, 0])
    # an empty target: p = prod_t y_t(blank)
    empty = lambda T, x: _ctc(T, x, np.array([[0], [2]]), [4, 7], [0, 1], reduction="none")  # noqa: E731
    run_gradcheck(empty, X[:, :2])
    run_parity(empty, X[:, :2])
    lp = np.log(np.exp(X[:4, 0]) / np.exp(X[:4, 0]).sum(1, keepdims=True))
    out = empty(tinyattn, tinyattn.tensor(X[:, :2])).numpy()
    np.testing.assert_allclose(out[0], -lp[:, 0].sum(), rtol=1e-13)


def test_ctc_label_equal_to_blank_is_torchs():
    """A target label equal to ``blank`` (torch's docs rule it out, torch runs it) may be
    reached by skipping a blank, as in torch's forward. Our gradient is the derivative of
    that value (torch's backward is not: it differs there, so only the values are compared)."""
    tg, il, tl = np.array([[1, 0, 2], [0, 0, 0]]), [7, 7], [3, 2]
    f = lambda T, x: _ctc(T, x, tg, il, tl, reduction="none")  # noqa: E731
    run_gradcheck(f, X[:, :2])
    if torch is not None:
        want = f(torch, torch.tensor(X[:, :2])).numpy()
        np.testing.assert_allclose(f(tinyattn, tinyattn.tensor(X[:, :2])).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_no_alignment(zero_infinity):
    """Repeats need a blank between them: 3 labels with one repeat need 4 steps, with 3
    there is no alignment: inf (0 with zero_infinity), gradient 0 for that sequence."""
    x = tinyattn.tensor(X[:3, :2], requires_grad=True)
    tg, il, tl = np.array([[1, 1, 2], [1, 0, 0]]), [3, 3], [3, 1]
    out = _ctc(tinyattn, x, tg, il, tl, reduction="none", zero_infinity=zero_infinity)
    assert out.detach().numpy()[0] == (0.0 if zero_infinity else np.inf) and np.isfinite(
        out.detach().numpy()[1]
    )
    out[1].backward()
    assert (x.grad.numpy()[:, 0] == 0).all() and (x.grad.numpy()[:, 1] != 0).any()
    if zero_infinity:  # torch's gradient for an inf loss without zero_infinity is NaN
        f = lambda T, x: _ctc(T, x, tg, il, tl, reduction="sum", zero_infinity=True)  # noqa: E731
        run_parity(f, X[:3, :2])
        run_gradcheck(f, X[:3, :2])


def test_ctc_input_length_equal_to_needed_steps():
    """Exactly enough steps (2 labels, a repeat: 3 steps) has one alignment: p = its product."""
    lp = np.log(rand(3, 1, 4, seed=42, low=0.1, high=0.9))
    out = tinyattn.nn.functional.ctc_loss(
        tinyattn.tensor(lp), tinyattn.tensor([[2, 2]]), [3], [2], reduction="none"
    )
    np.testing.assert_allclose(out.numpy()[0], -(lp[0, 0, 2] + lp[1, 0, 0] + lp[2, 0, 2]))


# -- second derivatives: torch's autograd of the recursion written with torch ops ----------


def _torch_ctc_by_ops(lp, targets, il, tl, blank=0):
    """Per-sequence losses (N,) by the alpha recursion in torch ops (log 0 = -1e30)."""
    neg = -1e30
    losses = []
    for n in range(lp.shape[1]):
        labels = [int(v) for v in targets[n, : tl[n]]]
        ext = [blank]
        for v in labels:
            ext += [v, blank]
        skip = torch.tensor(
            [s % 2 == 1 and s >= 3 and ext[s] != ext[s - 2] for s in range(len(ext))]
        )
        y = lp[: il[n], n, ext]
        alpha = torch.cat([y[0, :2], lp.new_full((len(ext) - 2,), neg)])[: len(ext)]
        for t in range(1, int(il[n])):
            step = torch.cat([lp.new_full((1,), neg), alpha[:-1]])
            jump = torch.cat([lp.new_full((2,), neg), alpha[:-2]])[: len(ext)]
            jump = torch.where(skip, jump, torch.full_like(jump, neg))
            alpha = torch.logsumexp(torch.stack([alpha, step, jump]), 0) + y[t]
        losses.append(-torch.logsumexp(alpha[-2:], 0))
    return torch.stack(losses)


def _ours_or_torch_ops(T, x):
    lp = x.log_softmax(2)
    if T is tinyattn:
        return _ctc(T, x, reduction="none")
    return _torch_ctc_by_ops(lp, TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)


@needs_torch
def test_torch_ops_reference_is_torchs_ctc_loss():
    """The reference above is torch's ctc_loss in value and first derivative."""
    got = []
    for f in (_ctc, _ours_or_torch_ops):
        x = torch.tensor(X, requires_grad=True)
        out = f(torch, x, reduction="none") if f is _ctc else f(torch, x)
        (out * torch.tensor([0.5, -1.0, 2.0], dtype=x.dtype)).sum().backward()
        got.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-12)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-9, atol=1e-12)


def test_ctc_second_derivatives():
    """create_graph recomputes the losses with ops: finite differences and torch's
    autograd of the same recursion (torch's own ctc_loss has no double backward)."""
    run_gradgradcheck(lambda T, x: _ctc(T, x, reduction="sum"), X)
    run_parity2(_ours_or_torch_ops, X)
    # log_probs a leaf (no log_softmax between), and the impossible / zero_infinity case
    lp = np.log(rand(4, 2, 3, seed=43, low=0.1, high=0.9))
    tg, il, tl = np.array([[1, 1], [2, 1]]), [2, 4], [2, 2]  # (the first: no alignment)
    run_gradgradcheck(
        lambda T, x: T.nn.functional.ctc_loss(x, T.tensor(tg), il, tl, zero_infinity=True), lp
    )


# -- bad input --------------------------------------------------------------------------------


def test_ctc_target_outside_classes():
    """torch reads out of bounds here (no error); we refuse before any kernel runs."""
    with pytest.raises(RuntimeError, match=r"targets must be class indices in \[0, 4\].*7"):
        _ctc(tinyattn, tinyattn.tensor(X[:, :2]), np.array([[1, 7], [2, 0]]), [7, 7], [2, 1])
    # padding past a target's length is not read
    out = _ctc(tinyattn, tinyattn.tensor(X[:, :2]), np.array([[1, 7], [2, -5]]), [7, 7], [1, 1])
    assert np.isfinite(out.item())


def test_ctc_negative_target_length():
    check_bad_call(
        lambda T: T.nn.functional.ctc_loss(
            T.zeros(3, 2, 4), T.tensor([[1, 2], [1, 1]]), T.tensor([3, 3]), T.tensor([-1, 1])
        ),
        r"target_lengths.*>= 0.*-1",
    )
