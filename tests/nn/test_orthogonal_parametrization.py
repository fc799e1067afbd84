"""parametrizations.orthogonal: matrix_exp / cayley / householder, with and without trivialization."""

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn.autograd.gradcheck import gradcheck
from tinyattn.nn.utils import parametrizations, parametrize
from tinyattn.nn.utils._orthogonal import _householder_product, _Orthogonal

CASES = [
    ((4, 4), None, True),
    ((4, 4), "cayley", True),
    ((4, 4), "householder", True),
    ((3, 5), None, True),
    ((5, 3), "matrix_exp", True),
    ((5, 3), "cayley", True),
    ((5, 3), "householder", False),
    ((3, 5), "householder", False),
    ((4, 4), "householder", False),
]


def _gram_is_identity(w):
    n, k = w.shape
    gram = w @ w.T if n < k else w.T @ w
    np.testing.assert_allclose(gram, np.eye(min(n, k)), atol=1e-12)


@pytest.mark.parametrize("shape,orth_map,triv", CASES)
def test_orthogonal_weight_and_gradient(shape, orth_map, triv):
    tinyattn.manual_seed(0)
    lin = nn.Linear(shape[1], shape[0]).double()
    w0 = lin.weight.detach().numpy().copy()
    parametrizations.orthogonal(lin, orthogonal_map=orth_map, use_trivialization=triv)
    assert parametrize.is_parametrized(lin, "weight")
    w = lin.weight.detach().numpy()
    _gram_is_identity(w)
    # the registered weight is the orthogonal factor of the QR of the old one, diag(R) > 0
    tall = w0 if shape[0] >= shape[1] else w0.T
    q, r = np.linalg.qr(tall)
    expected = q * np.sign(np.diag(r))
    np.testing.assert_allclose(w if shape[0] >= shape[1] else w.T, expected, atol=1e-12)
    X = lin.parametrizations.weight.original
    orth = lin.parametrizations.weight[0]
    # perturb X so the gradient is not taken at the special point only
    Xp = tinyattn.tensor(X.detach().numpy() + 0.1 * np.tril(np.ones(shape), -1), requires_grad=True)
    if orth.orthogonal_map == "householder":
        # householder reads the diagonal through torch's .int() (a step at +-1): hold it fixed
        tall = Xp if shape[0] >= shape[1] else Xp.mT
        fixed = tinyattn.tensor(tall.detach().numpy() - np.tril(tall.detach().numpy(), -1))
        lower = tinyattn.tensor(np.tril(tall.detach().numpy(), -1), requires_grad=True)
        as_given = (lambda t: t) if shape[0] >= shape[1] else (lambda t: t.mT)
        assert gradcheck(lambda low: orth(as_given(low.tril(-1) + fixed)), (lower,))
    else:
        assert gradcheck(lambda x: orth(x), (Xp,))
    _gram_is_identity(orth(Xp).detach().numpy())


def test_householder_product_gradcheck():
    rng = np.random.default_rng(1)
    A = np.tril(rng.standard_normal((5, 3)), -1)
    tau = 2.0 / (1.0 + (A * A).sum(0))
    At = tinyattn.tensor(A, requires_grad=True)
    assert gradcheck(lambda a: _householder_product(a.tril(-1), tinyattn.tensor(tau)), (At,))
    Q = _householder_product(tinyattn.tensor(A), tinyattn.tensor(tau)).numpy()
    _gram_is_identity(Q)


def test_assigning_an_orthogonal_matrix():
    lin = nn.Linear(4, 4).double()
    parametrizations.orthogonal(lin)
    q = np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))[0]
    lin.weight = tinyattn.tensor(q)
    np.testing.assert_allclose(lin.weight.detach().numpy(), q, atol=1e-14)


def test_batched_weight():
    m = nn.Module()
    m.register_parameter("weight", nn.Parameter(tinyattn.randn(2, 4, 3, dtype=tinyattn.float64)))
    parametrizations.orthogonal(m)
    for w in m.weight.detach().numpy():
        _gram_is_identity(w)


def test_orthogonal_errors():
    with pytest.raises(
        ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."
    ):
        parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(
        ValueError,
        match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr',
    ):
        parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        parametrizations.orthogonal(nn.Linear(2, 2), "nope")
    lin = parametrizations.orthogonal(
        nn.Linear(2, 2).double(), orthogonal_map="cayley", use_trivialization=False
    )
    _gram_is_identity(
        lin.weight.detach().numpy()
    )  # registration treats right_inverse as the identity
    with pytest.raises(NotImplementedError, match="when use_trivialization=False"):
        lin.weight = tinyattn.eye(2)
    orth = _Orthogonal(tinyattn.ones(3, 2), "householder")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        orth.right_inverse(tinyattn.ones(2, 2))


@pytest.mark.parametrize("shape,orth_map,triv", CASES)
def test_orthogonal_matches_torch(shape, orth_map, triv):
    torch = pytest.importorskip("torch", reason="torch parity")
    torch.manual_seed(0)
    theirs = torch.nn.Linear(shape[1], shape[0]).double()
    ours = nn.Linear(shape[1], shape[0]).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    torch.nn.utils.parametrizations.orthogonal(
        theirs, orthogonal_map=orth_map, use_trivialization=triv
    )
    parametrizations.orthogonal(ours, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-13
    )
    if shape[0] == shape[1] or not triv:  # deterministic: no random completion of base
        np.testing.assert_allclose(
            ours.parametrizations.weight.original.detach().numpy(),
            theirs.parametrizations.weight.original.detach().numpy(),
            atol=1e-13,
        )
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})  # base included
    x = np.random.default_rng(3).standard_normal((2, shape[1]))
    yt, y = theirs(torch.tensor(x)), ours(tinyattn.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), atol=1e-13)
    yt.pow(2).sum().backward()
    y.pow(2).sum().backward()
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(),
        theirs.parametrizations.weight.original.grad.numpy(),
        atol=1e-12,
    )
