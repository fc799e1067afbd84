"""Tensor methods of the sorting, scan and rearranging ops (``x.topk(3)`` ...), against
their functional forms (tested in test_sorting.py / test_scans_rearrange.py).
"""

import numpy as np
import pytest

import tinyattn

X = tinyattn.tensor(np.random.default_rng(0).uniform(-1, 1, (3, 4)))
I = tinyattn.tensor([1, 0, 3, 1])
P = X @ X.t()  # (3, 3): the shape of X @ X^T


def _equal(a, b):
    for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(u.numpy(), v.numpy())


@pytest.mark.parametrize(
    "method,functional",
    [
        (lambda: X.topk(2), lambda: tinyattn.topk(X, 2)),
        (lambda: X.topk(2, dim=0, largest=False), lambda: tinyattn.topk(X, 2, 0, False)),
        (lambda: X.sort(descending=True), lambda: tinyattn.sort(X, descending=True)),
        (lambda: X.sort(0, stable=True), lambda: tinyattn.sort(X, 0, stable=True)),
        (lambda: X.argsort(dim=0), lambda: tinyattn.argsort(X, 0)),
        (lambda: X.msort(), lambda: tinyattn.msort(X)),
        (lambda: X.kthvalue(2, 1, True), lambda: tinyattn.kthvalue(X, 2, 1, True)),
        (lambda: X.median(), lambda: tinyattn.median(X)),
        (lambda: X.median(0), lambda: tinyattn.median(X, 0)),
        (lambda: X.nanmedian(1), lambda: tinyattn.nanmedian(X, 1)),
        (lambda: X.mode(1), lambda: tinyattn.mode(X, 1)),
        (lambda: I.unique(return_counts=True), lambda: tinyattn.unique(I, return_counts=True)),
        (lambda: I.unique_consecutive(), lambda: tinyattn.unique_consecutive(I)),
        (lambda: I.bincount(minlength=6), lambda: tinyattn.bincount(I, minlength=6)),
        (lambda: X.cumprod(1), lambda: tinyattn.cumprod(X, 1)),
        (lambda: X.cummax(0), lambda: tinyattn.cummax(X, 0)),
        (lambda: X.cummin(1), lambda: tinyattn.cummin(X, 1)),
        (lambda: X.diff(dim=0), lambda: tinyattn.diff(X, dim=0)),
        (lambda: X.diag(1), lambda: tinyattn.diag(X, 1)),
        (lambda: X.diag_embed(), lambda: tinyattn.diag_embed(X)),
        (lambda: X.lerp(X * 2, 0.25), lambda: tinyattn.lerp(X, X * 2, 0.25)),
        (
            lambda: P.addmm(X, X.t(), beta=0.5, alpha=2),
            lambda: tinyattn.addmm(P, X, X.t(), beta=0.5, alpha=2),
        ),
        (
            lambda: P[None].baddbmm(X[None], X.t()[None]),
            lambda: tinyattn.baddbmm(P[None], X[None], X.t()[None]),
        ),
        (
            lambda: X[:, :3].cross(X[:, 1:], dim=1),
            lambda: tinyattn.cross(X[:, :3], X[:, 1:], 1),
        ),
        (
            lambda: X.clamp(X * 0.5, X * 0 + 0.2),
            lambda: tinyattn.clamp(X, X * 0.5, X * 0 + 0.2),
        ),
    ],
)
def test_method_matches_function(method, functional):
    _equal(method(), functional())
