"""torch names built from existing ops: complex-number functions on real tensors,
addmv/addr, rsub, scalar_tensor, randint_like, empty_strided, logspace, trapz, windows."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand, torch

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

CASES = {
    "addmv": (lambda lib, x, m, v: lib.addmv(x, m, v, beta=0.5, alpha=-2),
              (rand(3, seed=1), rand(3, 4, seed=2), rand(4, seed=3))),
    "addmv_beta0": (lambda lib, x, m, v: lib.addmv(x, m, v, beta=0),
                    (rand(3, seed=1), rand(3, 4, seed=2), rand(4, seed=3))),
    "addr": (lambda lib, x, a, b: lib.addr(x, a, b, alpha=3),
             (rand(3, 1, seed=4), rand(3, seed=5), rand(2, seed=6))),
    "rsub": (lambda lib, a, b: lib.rsub(a, b, alpha=2), (rand(3, 4, seed=7), rand(4, seed=8))),
    "rsub_scalar": (lambda lib, a: lib.rsub(a, 1.5), (rand(3, seed=9),)),
    "adjoint": (lambda lib, x: lib.adjoint(x), (rand(2, 3, 4, seed=10),)),
    "conj": (lambda lib, x: lib.conj(x) * lib.conj_physical(x) + lib.real(x)
             + lib.resolve_conj(x) - lib.resolve_neg(x), (rand(3, seed=11),)),
    "narrow_copy": (lambda lib, x: lib.narrow_copy(x, 0, 1, 2), (rand(4, 2, seed=12),)),
    "unsafe_chunk": (lambda lib, x: lib.unsafe_chunk(x, 2, 1), (rand(2, 4, seed=13),)),
    "unsafe_split": (lambda lib, x: lib.unsafe_split(x, 2), (rand(5, 2, seed=14),)),
    "unsafe_split_with_sizes": (lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 3], 1),
                                (rand(2, 4, seed=15),)),
    "trapz": (lambda lib, y, x: lib.trapz(y, x), (rand(3, 5, seed=16), np.linspace(0, 1, 5))),
    "trapz_dx": (lambda lib, y: lib.trapz(y, dx=0.5, dim=0), (rand(3, 5, seed=17),)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_torch_parity(name):
    f, arrays = CASES[name]
    grad = [a.dtype.kind == "f" for a in arrays]
    if name == "trapz":
        grad = [True, False]
    check_op(f, *arrays, grad=grad)


def test_queries_on_real_tensors():
    x = tinyattn.ones(2)
    assert tinyattn.is_conj(x) is False and tinyattn.is_neg(x) is False
    assert tinyattn.real(x) is x and tinyattn.conj(x) is x


@pytest.mark.parametrize(
    "name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
             "kaiser_window"],
)  # fmt: skip
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, length, periodic):
    fn = getattr(tinyattn, name)
    w = fn(length, periodic)
    assert w.dtype == tinyattn.float32 and tuple(w.shape) == (length,)
    if length > 2 and not periodic:
        np.testing.assert_allclose(w.numpy(), w.numpy()[::-1], atol=1e-6)  # symmetric
    if torch is not None:
        theirs = getattr(torch, name)(length, periodic, dtype=torch.float64)
        ours = fn(length, periodic, dtype=tinyattn.float64)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="non-negative window_length"):
        fn(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        fn(3, dtype=tinyattn.int64)


@needs_torch
def test_window_parameters_match_torch():
    ours = tinyattn.hamming_window(7, False, 0.6, 0.3, dtype=tinyattn.float64).numpy()
    theirs = torch.hamming_window(7, False, 0.6, 0.3, dtype=torch.float64).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-12)
    ours = tinyattn.kaiser_window(9, True, 5.0, dtype=tinyattn.float64).numpy()
    theirs = torch.kaiser_window(9, True, 5.0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_factories():
    assert tinyattn.scalar_tensor(3).dtype == tinyattn.float32
    assert tinyattn.scalar_tensor(3).ndim == 0 and tinyattn.scalar_tensor(3).item() == 3.0
    assert tinyattn.scalar_tensor(2, dtype=tinyattn.int64).dtype == tinyattn.int64
    tinyattn.manual_seed(0)
    r = tinyattn.randint_like(tinyattn.ones(50, dtype=tinyattn.float64), 3)
    assert r.dtype == tinyattn.float64 and set(r.tolist()) <= {0.0, 1.0, 2.0}
    r = tinyattn.randint_like(tinyattn.ones(50, dtype=tinyattn.int32), 5, 7)
    assert r.dtype == tinyattn.int32 and set(r.tolist()) <= {5, 6}
    e = tinyattn.empty_strided((2, 3), (1, 2))
    assert e.stride() == (1, 2) and e.dtype == tinyattn.float32
    np.testing.assert_allclose(tinyattn.logspace(0, 2, 3).numpy(), [1, 10, 100])
    np.testing.assert_allclose(tinyattn.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8])
    with pytest.raises(RuntimeError, match="non-negative"):
        tinyattn.logspace(0, 1, -1)


@needs_torch
def test_factories_match_torch():
    for args, kw in (((0, 2, 5), {}), ((-1, 1, 4), {"base": 2.0}), ((1, 1, 1), {})):
        ours = tinyattn.logspace(*args, dtype=tinyattn.float64, **kw).numpy()
        theirs = torch.logspace(*args, dtype=torch.float64, **kw).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert str(torch.scalar_tensor(3).dtype)[6:] == tinyattn.scalar_tensor(3).dtype.name
    assert (
        torch.empty_strided((2, 3), (1, 2)).stride()
        == tinyattn.empty_strided((2, 3), (1, 2)).stride()
    )
    assert torch.randint_like(torch.ones(2), 3).dtype == torch.float32
