"""nn.init: orthogonal_, eye_, dirac_, sparse_ and their deprecated aliases.

orthogonal_ and sparse_ draw from tinyattn's RNG, not torch's, so they are checked by
their defining properties; eye_ and dirac_ are deterministic and compared with torch.
"""

import math

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.init as init


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 2, 2), (6, 2, 3), (1, 7)])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_orthogonal_is_semi_orthogonal_times_gain(shape, gain):
    p = tinyattn.nn.Parameter(tinyattn.empty(*shape, dtype=tinyattn.float64))
    assert init.orthogonal_(p, gain=gain) is p
    assert p.requires_grad and p.grad_fn is None and tuple(p.shape) == shape
    w = p.detach().numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, gain**2 * np.eye(min(rows, cols)), atol=1e-12)


def test_orthogonal_keeps_dtype_uses_generator_and_is_haar():
    t = init.orthogonal_(tinyattn.empty(6, 6))
    assert t.dtype == tinyattn.float32
    np.testing.assert_allclose(t.numpy() @ t.numpy().T, np.eye(6), atol=1e-5)
    g1, g2 = tinyattn.Generator().manual_seed(3), tinyattn.Generator().manual_seed(3)
    a = init.orthogonal_(tinyattn.empty(4, 7), generator=g1).numpy()
    b = init.orthogonal_(tinyattn.empty(4, 7), generator=g2).numpy()
    np.testing.assert_array_equal(a, b)
    # the sign correction makes Q Haar: the first entry is symmetric about 0, E[w00^2] = 1/n
    g = tinyattn.Generator().manual_seed(0)
    firsts = np.array(
        [init.orthogonal_(tinyattn.empty(3, 3), generator=g).numpy()[0, 0] for _ in range(3000)]
    )
    assert abs(firsts.mean()) < 0.05
    assert abs((firsts**2).mean() - 1 / 3) < 0.03


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(tinyattn.empty(4))
    e = tinyattn.empty(0, 3)
    assert init.orthogonal_(e) is e


def _torch_parity(torch, ours, fn_name, shape, *args):
    theirs = getattr(torch.nn.init, fn_name)(torch.empty(*shape), *args).numpy()
    np.testing.assert_array_equal(ours.numpy(), theirs)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (0, 2)])
def test_eye_matches_torch(shape):
    t = init.eye_(tinyattn.full(shape, 7.0))
    np.testing.assert_array_equal(t.numpy(), np.eye(*shape))
    torch = pytest.importorskip("torch", reason="torch parity")
    _torch_parity(torch, t, "eye_", shape)


def test_eye_in_place_on_parameter_and_errors():
    p = tinyattn.nn.Parameter(tinyattn.randn(2, 3))
    assert init.eye_(p) is p and p.requires_grad and p.grad_fn is None
    for bad in [(3,), (2, 2, 2)]:
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            init.eye_(tinyattn.empty(*bad))


@pytest.mark.parametrize(
    "shape,groups",
    [
        ((3, 16, 5, 5), 1),
        ((6, 24, 5, 5), 3),
        ((4, 2, 3), 1),
        ((4, 2, 3), 2),
        ((5, 3, 3, 4, 5), 1),
        ((2, 5, 4, 4), 2),
    ],
)
def test_dirac_matches_torch(shape, groups):
    t = init.dirac_(tinyattn.full(shape, 2.0), groups)
    assert t.numpy().sum() == groups * min(shape[0] // groups, shape[1])
    torch = pytest.importorskip("torch", reason="torch parity")
    _torch_parity(torch, t, "dirac_", shape, groups)


def test_dirac_convolution_is_identity():
    w = init.dirac_(tinyattn.empty(4, 4, 3, 3, dtype=tinyattn.float64))
    x = tinyattn.randn(2, 4, 6, 6, dtype=tinyattn.float64)
    y = tinyattn.nn.functional.conv2d(x, w, padding=1)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-14)


def test_dirac_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(tinyattn.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(tinyattn.empty(5, 3, 3), groups=2)


@pytest.mark.parametrize(
    "rows,cols,sparsity", [(10, 50, 0.1), (10, 20, 0.3), (7, 9, 0.5), (4, 3, 0.0), (4, 3, 1.0)]
)
def test_sparse_zero_count_per_column(rows, cols, sparsity):
    p = tinyattn.nn.Parameter(tinyattn.empty(rows, cols, dtype=tinyattn.float64))
    assert init.sparse_(p, sparsity, std=0.5) is p and p.grad_fn is None
    w = p.detach().numpy()
    expected = math.ceil(sparsity * rows)  # 0.3 * 10 rounds up to 4, as torch's ceil
    np.testing.assert_array_equal((w == 0).sum(axis=0), np.full(cols, expected))


def test_sparse_std_and_zero_positions_vary():
    w = init.sparse_(tinyattn.empty(200, 300, dtype=tinyattn.float64), 0.25, std=0.02).numpy()
    nonzero = w[w != 0]
    assert abs(nonzero.std() - 0.02) < 0.001 and abs(nonzero.mean()) < 0.001
    assert len({tuple(np.flatnonzero(w[:, c] == 0)) for c in range(300)}) > 250
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(tinyattn.empty(2, 2, 2), 0.1)


def test_sparse_zero_count_matches_torch():
    torch = pytest.importorskip("torch", reason="torch parity")
    for rows, sparsity in [(10, 0.3), (9, 0.1), (6, 0.5)]:
        theirs = (torch.nn.init.sparse_(torch.empty(rows, 8), sparsity) == 0).sum(0).numpy()
        ours = (init.sparse_(tinyattn.empty(rows, 8), sparsity).numpy() == 0).sum(0)
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "old,args",
    [
        ("orthogonal", ((3, 3),)),
        ("eye", ((3, 3),)),
        ("dirac", ((3, 3, 3),)),
        ("sparse", ((3, 3), 0.5)),
    ],
)
def test_deprecated_aliases_warn_like_torch(old, args):
    shape, *rest = args
    with pytest.warns(FutureWarning) as record:
        out = getattr(init, old)(tinyattn.empty(*shape), *rest)
    assert tuple(out.shape) == shape
    message = f"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`."
    assert str(record[0].message) == message
    torch = pytest.importorskip("torch", reason="torch parity")
    with pytest.warns(FutureWarning) as theirs:
        getattr(torch.nn.init, old)(torch.empty(*shape), *rest)
    assert str(theirs[0].message) == message


def test_init_names_match_torch():
    torch = pytest.importorskip("torch", reason="torch parity")
    public = {n for n in torch.nn.init.__all__}
    assert public <= set(dir(init))
