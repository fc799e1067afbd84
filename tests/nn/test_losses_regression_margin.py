"""Regression, likelihood, margin and CTC losses: gradcheck + torch parity (first and second order) per reduction, kinks,
the deprecated size_average/reduce flags, modules (repr, parity), and bad input."""

import warnings

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_gradcheck, run_gradgradcheck, run_parity

import tinyattn
import tinyattn.nn as nn

try:
    import torch
except ImportError:  # parity parts skip; gradchecks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
REDUCTIONS = ["mean", "sum", "none"]

A, B = rand(4, 5, seed=1, low=-2, high=2), rand(4, 5, seed=2, low=-2, high=2)
SIGNS = np.where(rand(4, seed=3) > 0, 1.0, -1.0)
SIGNS45 = np.where(rand(4, 5, seed=4) > 0, 1.0, -1.0)


def _F(T):
    return T.nn.functional


def check_no_torch_second_order(f, *arrays):
    """check_op without torch parity of second derivatives (torch has none for the op);
    our second derivatives are still checked by finite differences."""
    run_gradcheck(f, *arrays)
    run_parity(f, *arrays)
    run_gradgradcheck(f, *arrays)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_l1_loss(reduction):
    check_op(lambda T, a, b: _F(T).l1_loss(a, b, reduction=reduction), A, B)
    w = rand(4, 5, seed=5, low=0.1, high=2)
    check_op(lambda T, a, b, w: _F(T).l1_loss(a, b, reduction=reduction, weight=w), A, B, w)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_weight_is_torchs(reduction):
    """torch 2.13: weighted 'mean' is sum(w l) / sum(w) (was: mean(w l))."""
    w = rand(4, 5, seed=25, low=0.1, high=2)
    check_op(lambda T, a, b, w: _F(T).mse_loss(a, b, reduction=reduction, weight=w), A, B, w)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_smooth_l1_loss(reduction, beta):
    check_op(lambda T, a, b: _F(T).smooth_l1_loss(a, b, reduction=reduction, beta=beta), A, B)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.3])
def test_huber_loss(reduction, delta):
    check_op(lambda T, a, b: _F(T).huber_loss(a, b, reduction=reduction, delta=delta), A, B)
    w = rand(4, 5, seed=6, low=0.1, high=2)
    check_op(lambda T, a, b, w: _F(T).huber_loss(a, b, reduction, delta, weight=w), A, B, w)


@needs_torch
@pytest.mark.parametrize("name", ["l1_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_at_their_kinks(name):
    """d = 0 and |d| = beta/delta exactly: torch's gradient."""
    a = np.array([0.0, 1.0, -1.0, 0.5, -0.5, 2.0])
    b = np.zeros(6)
    run_parity(lambda T, a, b: getattr(_F(T), name)(a, b, reduction="sum"), a, b)
    if name != "l1_loss":
        kw = {"beta": 0.5} if name == "smooth_l1_loss" else {"delta": 0.5}
        run_parity(lambda T, a, b: getattr(_F(T), name)(a, b, reduction="sum", **kw), a, b)


P = rand(4, 5, seed=7, low=0.05, high=0.95)
T01 = rand(4, 5, seed=8, low=0.0, high=1.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    check_op(lambda T, x, t: _F(T).binary_cross_entropy(x, t, reduction=reduction), P, T01)
    w = rand(5, seed=9, low=0.1, high=2)

    def f(T, x, t):
        return _F(T).binary_cross_entropy(x, t, T.tensor(w).to(x.dtype), reduction=reduction)

    check_op(f, P, T01)


@needs_torch
def test_binary_cross_entropy_clamps_logs_at_minus_100():
    x, t = np.array([0.0, 1.0, 0.0, 1.0, 1e-50]), np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    run_parity(
        lambda T, x, t: _F(T).binary_cross_entropy(x, t, reduction="none"),
        x,
        t,
        dtypes=(np.float64,),
        grad=[True, False],
    )
    out = tinyattn.nn.functional.binary_cross_entropy(tinyattn.tensor(x), tinyattn.tensor(t), None)
    assert np.isfinite(out.item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(reduction):
    # (torch: no gradient to target)
    check_op(
        lambda T, x, y: _F(T).soft_margin_loss(x, y, reduction=reduction),
        A,
        SIGNS45,
        grad=[True, False],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(reduction, margin):
    a, b = rand(4, seed=10), rand(4, seed=11)
    check_op(
        lambda T, a, b, y: _F(T).margin_ranking_loss(a, b, y, margin, reduction=reduction),
        a,
        b,
        SIGNS,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.2])
def test_hinge_embedding_loss(reduction, margin):
    check_op(
        lambda T, x, y: _F(T).hinge_embedding_loss(x, y, margin, reduction=reduction),
        A,
        SIGNS45,
        grad=[True, False],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
@pytest.mark.parametrize("batched", [True, False])
def test_cosine_embedding_loss(reduction, margin, batched):
    a, b = (A, B) if batched else (A[0], B[0])
    y = SIGNS if batched else np.array(-1.0)
    check_op(
        lambda T, a, b, y: _F(T).cosine_embedding_loss(a, b, y, margin, reduction=reduction),
        a,
        b,
        y,
        grad=[True, True, False],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("use_weight", [False, True])
def test_multilabel_soft_margin_loss(reduction, use_weight):
    w = rand(5, seed=12, low=0.1, high=2) if use_weight else None

    def f(T, x, t):
        weight = None if w is None else T.tensor(w).to(x.dtype)
        return _F(T).multilabel_soft_margin_loss(x, t, weight, reduction=reduction)

    check_op(f, A, (T01 > 0.5).astype(np.float64), grad=[True, False])


CLASSES = np.array([0, 4, 2, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("use_weight", [False, True])
def test_multi_margin_loss(reduction, p, use_weight):
    w = rand(5, seed=13, low=0.1, high=2) if use_weight else None

    def f(T, x):
        weight = None if w is None else T.tensor(w).to(x.dtype)
        return _F(T).multi_margin_loss(x, T.tensor(CLASSES), p, 0.7, weight, reduction=reduction)

    check_no_torch_second_order(f, A)


def test_multi_margin_loss_unbatched():
    check_no_torch_second_order(lambda T, x: _F(T).multi_margin_loss(x, T.tensor(3)), A[0])


@needs_torch
def test_multi_margin_loss_at_the_hinge():
    """z = margin - x[y] + x[j] = 0 exactly: torch's gradient there is 0."""
    x = np.array([[1.0, 0.0, 0.5]])
    run_parity(lambda T, x: _F(T).multi_margin_loss(x, T.tensor([0])), x)
    run_parity(lambda T, x: _F(T).multilabel_margin_loss(x, T.tensor([[0, -1, 1]])), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    t = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0], [4, 4, -1, 0, 0]])
    check_no_torch_second_order(
        lambda T, x: _F(T).multilabel_margin_loss(x, T.tensor(t), reduction=reduction), A
    )


def test_multilabel_margin_loss_unbatched():
    check_no_torch_second_order(
        lambda T, x: _F(T).multilabel_margin_loss(x, T.tensor([2, 0, -1, 1, 1])), A[0]
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,swap", [(2.0, False), (1.0, False), (2.0, True), (3.0, True)])
def test_triplet_margin_loss(reduction, p, swap):
    a, b, c = rand(4, 5, seed=14), rand(4, 5, seed=15), rand(4, 5, seed=16)
    check_op(
        lambda T, a, b, c: _F(T).triplet_margin_loss(
            a, b, c, margin=1.5, p=p, swap=swap, reduction=reduction
        ),
        a,
        b,
        c,
    )


def test_triplet_margin_loss_unbatched():
    a, b, c = rand(5, seed=17), rand(5, seed=18), rand(5, seed=19)
    check_op(lambda T, a, b, c: _F(T).triplet_margin_loss(a, b, c, margin=2.0), a, b, c)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 5), (4,), (4, 1)])
def test_gaussian_nll_loss(reduction, full, var_shape):
    var = rand(*var_shape, seed=20, low=0.2, high=2.0)
    check_op(
        lambda T, x, t, v: _F(T).gaussian_nll_loss(x, t, v, full=full, reduction=reduction),
        A,
        B,
        var,
    )


@needs_torch
def test_gaussian_nll_loss_var_below_eps_and_number():
    var = np.array([1e-9, 0.5, 2.0, 0.0])
    run_parity(lambda T, x, t, v: _F(T).gaussian_nll_loss(x, t, v), A[0, :4], B[0, :4], var)
    run_parity(lambda T, x, t: _F(T).gaussian_nll_loss(x, t, 0.7), A, B)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True)])
def test_poisson_nll_loss(reduction, log_input, full):
    x = A if log_input else rand(4, 5, seed=21, low=0.1, high=3.0)
    t = rand(4, 5, seed=22, low=0.1, high=4.0)
    check_op(
        lambda T, x, t: _F(T).poisson_nll_loss(x, t, log_input, full, reduction=reduction),
        x,
        t,
    )


@needs_torch
@pytest.mark.parametrize(
    "size_average,reduce", [(False, None), (None, False), (True, True), (False, True)]
)
def test_deprecated_size_average_and_reduce(size_average, reduce):
    for name in ("l1_loss", "smooth_l1_loss", "soft_margin_loss"):

        def f(T, a, b, name=name):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return getattr(_F(T), name)(a, b, size_average, reduce)

        run_parity(f, A, B, grad=[True, name != "soft_margin_loss"])
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        tinyattn.nn.functional.l1_loss(tinyattn.ones(2), tinyattn.ones(2), size_average, reduce)


# -- modules -----------------------------------------------------------------------------------


def _inputs(name):
    ints = {
        "MultiMarginLoss": CLASSES,
        "MultiLabelMarginLoss": np.array([[3, 0, -1, 1, 2]] * 4),
    }
    if name in ("MarginRankingLoss",):
        return [A[:, 0], B[:, 0], SIGNS]
    if name == "CosineEmbeddingLoss":
        return [A, B, SIGNS]
    if name == "TripletMarginLoss":
        return [A, B, rand(4, 5, seed=23)]
    if name == "GaussianNLLLoss":
        return [A, B, rand(4, 5, seed=24, low=0.2, high=2)]
    if name == "BCELoss":
        return [P, T01]
    if name in ("SoftMarginLoss", "HingeEmbeddingLoss"):
        return [A, SIGNS45]
    if name == "MultiLabelSoftMarginLoss":
        return [A, (T01 > 0.5).astype(np.float64)]
    if name in ints:
        return [A, ints[name]]
    return [A, B]


W5 = np.array([0.5, 1.0, 2.0, 1.5, 0.7])
MODULES = [
    ("L1Loss", (), {}),
    ("L1Loss", (), {"reduction": "sum"}),
    ("SmoothL1Loss", (), {"beta": 0.5}),
    ("HuberLoss", (), {"delta": 0.5, "reduction": "none"}),
    ("BCELoss", (), {}),
    ("BCELoss", (), {"weight": W5}),
    ("SoftMarginLoss", (), {}),
    ("MarginRankingLoss", (0.2,), {}),
    ("HingeEmbeddingLoss", (), {"margin": 0.5}),
    ("CosineEmbeddingLoss", (), {"margin": 0.1}),
    ("MultiLabelSoftMarginLoss", (), {"weight": W5}),
    ("MultiMarginLoss", (2, 0.5), {"weight": W5}),
    ("MultiLabelMarginLoss", (), {}),
    ("TripletMarginLoss", (), {"swap": True}),
    ("GaussianNLLLoss", (), {"full": True}),
    ("PoissonNLLLoss", (), {"reduction": "sum"}),
    ("L1Loss", (False,), {}),
]


@needs_torch
@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_module_repr_and_parity(name, args, kwargs):
    to_lib = {k: v for k, v in kwargs.items() if k != "weight"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = kwargs.get("weight")
        ours = getattr(nn, name)(
            *args, **to_lib, **({"weight": tinyattn.tensor(w)} if w is not None else {})
        )
        theirs = getattr(torch.nn, name)(
            *args, **to_lib, **({"weight": torch.tensor(w)} if w is not None else {})
        )
    assert repr(ours) == repr(theirs)
    assert ours.reduction == theirs.reduction
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    arrays = _inputs(name)
    target = {"MarginRankingLoss": 2, "CosineEmbeddingLoss": 2, "TripletMarginLoss": None}
    t_index = target.get(name, 1)  # (torch gives some targets no gradient: none here)
    grads = [a.dtype.kind == "f" and i != t_index for i, a in enumerate(arrays)]
    xo = [tinyattn.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    xt = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    lo, lt = ours(*xo), theirs(*xt)
    np.testing.assert_allclose(lo.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    lo.sum().backward()
    lt.sum().backward()
    for a, b in zip(xo, xt):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


# -- bad input -----------------------------------------------------------------------------------

O = lambda T, *s: T.ones(*s)  # noqa: E731
BAD = [
    (  # (was computed with the target promoted; torch refuses)
        "bce_target_dtype",
        lambda T: T.nn.functional.binary_cross_entropy(O(T, 3) * 0.5, (O(T, 3) * 0.5).double()),
        r"dtype.*float64.*float32",
    ),
    ("l1_reduction", lambda T: T.nn.functional.l1_loss(O(T, 3), O(T, 3), reduction="bad"), r"bad"),
    (
        "l1_weight_shape",
        lambda T: T.nn.functional.l1_loss(O(T, 2, 3), O(T, 2, 3), weight=O(T, 3)),
        r"Weights and input must have the same size.*\[3\].*\[2, 3\]",
    ),
    (
        "mse_weight_shape",
        lambda T: T.nn.functional.mse_loss(O(T, 2, 3), O(T, 2, 3), weight=O(T, 3)),
        r"Weights and input must have the same size.*\[3\].*\[2, 3\]",
    ),
    ("l1_shapes", lambda T: T.nn.functional.l1_loss(O(T, 3), O(T, 4)), r"\[3\].*\[4\]"),
    (
        "bce_shapes",
        lambda T: T.nn.functional.binary_cross_entropy(O(T, 3) / 2, O(T, 4)),
        r"\[4\].*\[3\]",
    ),
    (
        "bce_range",
        lambda T: T.nn.functional.binary_cross_entropy(O(T, 3) * 1.5, O(T, 3)),
        r"between 0 and 1",
    ),
    ("smooth_beta", lambda T: T.nn.functional.smooth_l1_loss(O(T, 3), O(T, 3), beta=-1.0), r"beta"),
    ("huber_delta", lambda T: T.nn.functional.huber_loss(O(T, 3), O(T, 3), delta=0.0), r"delta"),
    (
        "ranking_shapes",
        lambda T: T.nn.functional.margin_ranking_loss(O(T, 3), O(T, 3), O(T, 4)),
        r"input1 of shape \[3\].*target of shape \[4\]",
    ),
    (
        "cosine_emb_target",
        lambda T: T.nn.functional.cosine_embedding_loss(O(T, 3, 4), O(T, 3, 4), O(T, 4)),
        r"\[3, 4\].*\[4\]",
    ),
    (
        "multi_margin_target",
        lambda T: T.nn.functional.multi_margin_loss(O(T, 3, 4), T.tensor([0, 1])),
        r"Expected target size \[3\], but got \[2\]",
    ),
    (
        "multi_margin_range",
        lambda T: T.nn.functional.multi_margin_loss(O(T, 3, 4), T.tensor([0, 1, 4])),
        r"target out of range",
    ),
    (
        "multi_margin_p",
        lambda T: T.nn.functional.multi_margin_loss(O(T, 3, 4), T.tensor([0, 1, 2]), p=3),
        r"p == 1 and p == 2",
    ),
    (
        "multilabel_margin_shape",
        lambda T: T.nn.functional.multilabel_margin_loss(O(T, 3, 4), T.tensor([0, 1, 2])),
        r"inconsistent target size: \[3\] for input of size: \[3, 4\]",
    ),
    (
        "triplet_dims",
        lambda T: T.nn.functional.triplet_margin_loss(O(T, 3, 4), O(T, 4), O(T, 3, 4)),
        r"anchor 2D, positive 1D, and negative 2D",
    ),
    (
        "triplet_margin",
        lambda T: T.nn.functional.triplet_margin_loss(O(T, 2), O(T, 2), O(T, 2), margin=0.0),
        r"margin must be greater than 0",
    ),
    (
        "gaussian_var_size",
        lambda T: T.nn.functional.gaussian_nll_loss(O(T, 3, 4), O(T, 3, 4), O(T, 3, 3)),
        r"var is of incorrect size.*\[3, 3\]",
    ),
    (
        "gaussian_var_negative",
        lambda T: T.nn.functional.gaussian_nll_loss(O(T, 3, 4), O(T, 3, 4), -O(T, 3, 4)),
        r"negative",
    ),
    (
        "gaussian_reduction",
        lambda T: T.nn.functional.gaussian_nll_loss(O(T, 3), O(T, 3), O(T, 3), reduction="x"),
        r"'x'|x is not valid",
    ),
    (
        "poisson_shapes",
        lambda T: T.nn.functional.poisson_nll_loss(O(T, 3, 4), O(T, 3)),
        r"\[3, 4\].*\[3\]",
    ),
    (
        "soft_margin_shapes",
        lambda T: T.nn.functional.soft_margin_loss(O(T, 3, 4), O(T, 3)),
        r"\[3, 4\].*\[3\]",
    ),
]


@pytest.mark.parametrize("name,call,expected", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_bad_call(call, expected)


def test_gradcheck_bce_target_gradient():
    """d target = g w (log(1 - x) - log x) (float64 finite differences)."""
    run_gradcheck(lambda T, x, t: _F(T).binary_cross_entropy(x, t), P, T01)


# -- ctc_loss ------------------------------------------------------------------------------------

CTC_X = rand(6, 3, 5, seed=30, low=-2, high=2)
CTC_TARGETS = np.array([[1, 2, 2], [1, 1, 0], [3, 4, 1]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss(reduction, concatenated):
    """Through log_softmax (torch's gradient w.r.t. raw log_probs adds exp(log_probs))."""
    il, tl = np.array([6, 5, 6]), np.array([3, 1, 2])
    tg = np.array([1, 2, 2, 1, 3, 4]) if concatenated else CTC_TARGETS

    def f(T, x):
        return _F(T).ctc_loss(
            x.log_softmax(2), T.tensor(tg), T.tensor(il), T.tensor(tl), reduction=reduction
        )

    check_no_torch_second_order(f, CTC_X)


def test_ctc_loss_gradient_of_log_probs_is_the_true_derivative():
    """Finite differences w.r.t. log_probs themselves (not normalised): our gradient."""
    lp = np.log(rand(4, 2, 3, seed=31, low=0.1, high=0.9))
    tg, il, tl = np.array([[1, 2], [2, 0]]), np.array([4, 3]), np.array([2, 1])
    run_gradcheck(
        lambda T, x: _F(T).ctc_loss(x, T.tensor(tg), T.tensor(il), T.tensor(tl), blank=0), lp
    )


def test_ctc_loss_blank_and_unbatched():
    def f(T, x):
        return _F(T).ctc_loss(
            x.log_softmax(1), T.tensor([0, 2, 2]), T.tensor(5), T.tensor(3), blank=4
        )

    check_no_torch_second_order(f, CTC_X[:5, 0])


@needs_torch
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_target(zero_infinity):
    """3 labels with a repeat need 4 steps: with 3 the loss is inf (or 0), as torch."""
    tg, il, tl = np.array([[1, 1, 2], [1, 0, 0]]), np.array([3, 3]), np.array([3, 1])

    def f(T, x):
        return _F(T).ctc_loss(
            x.log_softmax(2),
            T.tensor(tg),
            T.tensor(il),
            T.tensor(tl),
            reduction="none",
            zero_infinity=zero_infinity,
        )

    x = CTC_X[:3, :2]
    out = f(tinyattn, tinyattn.tensor(x)).numpy()
    assert out[0] == (0.0 if zero_infinity else np.inf) and np.isfinite(out[1])
    if zero_infinity:
        run_parity(f, x)


@needs_torch
def test_ctc_module():
    ours = nn.CTCLoss(blank=1, zero_infinity=True)
    theirs = torch.nn.CTCLoss(blank=1, zero_infinity=True)
    assert repr(ours) == repr(theirs) == "CTCLoss()"
    lp = np.log(rand(5, 2, 4, seed=32, low=0.1, high=0.9))
    args = (np.array([[2, 3], [0, 0]]), np.array([5, 4]), np.array([2, 2]))
    lo = ours(tinyattn.tensor(lp).log_softmax(2), *[tinyattn.tensor(a) for a in args])
    lt = theirs(torch.tensor(lp).log_softmax(2), *[torch.tensor(a) for a in args])
    np.testing.assert_allclose(lo.item(), lt.item(), rtol=1e-12)


CTC_BAD = [
    (
        "ctc_input_lengths",
        lambda T: T.nn.functional.ctc_loss(
            T.zeros(3, 2, 4), T.tensor([[1, 2], [1, 1]]), T.tensor([4, 3]), T.tensor([2, 1])
        ),
        r"input_lengths.*\[1, 3\].*\[4, 3\]",
    ),
    (
        "ctc_targets_short",
        lambda T: T.nn.functional.ctc_loss(
            T.zeros(3, 2, 4), T.tensor([[1, 2], [1, 1]]), T.tensor([3, 3]), T.tensor([3, 1])
        ),
        r"targets.*max\(target_lengths\) = 3.*\[2, 2\]",
    ),
    (
        "ctc_reduction",
        lambda T: T.nn.functional.ctc_loss(
            T.zeros(3, 2, 4), T.tensor([[1], [1]]), T.tensor([3, 3]), T.tensor([1, 1]), 0, "avg"
        ),
        r"avg",
    ),
]


@pytest.mark.parametrize("name,call,expected", CTC_BAD, ids=[b[0] for b in CTC_BAD])
def test_ctc_bad_input(name, call, expected):
    check_bad_call(call, expected)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss(reduction, swap, custom):
    a, b, c = rand(4, 5, seed=33), rand(4, 5, seed=34), rand(4, 5, seed=35)

    def f(T, a, b, c):
        dist = (lambda x, y: 1.0 - _F(T).cosine_similarity(x, y)) if custom else None
        return _F(T).triplet_margin_with_distance_loss(
            a, b, c, distance_function=dist, margin=1.2, swap=swap, reduction=reduction
        )

    check_op(f, a, b, c)


@needs_torch
def test_triplet_margin_with_distance_module():
    ours = nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)
    theirs = torch.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)
    assert repr(ours) == repr(theirs)
    a, b, c = rand(4, 5, seed=36), rand(4, 5, seed=37), rand(4, 5, seed=38)
    lo = ours(*[tinyattn.tensor(x) for x in (a, b, c)])
    lt = theirs(*[torch.tensor(x) for x in (a, b, c)])
    np.testing.assert_allclose(lo.item(), lt.item(), rtol=1e-12)
    check_bad_call(
        lambda T: T.nn.functional.triplet_margin_with_distance_loss(
            T.ones(2, 3), T.ones(3), T.ones(2, 3)
        ),
        r"anchor 2D, positive 1D, and negative 2D",
    )
