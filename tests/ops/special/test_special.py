"""Special functions (ops/special/functions.py, the tinyattn.special namespace) against torch.

The sweeps compare values with torch over wide ranges with the relative bounds stated in
the op docstrings (the gradchecks, which run without torch too, are in
test_special_grad.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn

torch = pytest.importorskip("torch")


# -- value sweeps: max relative error vs torch (float64) and float32 rounding -------------
def _grid(low, high, n=20001, avoid_integers=False):
    x = np.linspace(low, high, n)
    if avoid_integers:
        x = x[np.abs(x - np.round(x)) > 1e-3]
    return x


def _ref(fn, x, dtype=torch.float64):
    return fn(torch.tensor(x, dtype=dtype)).double().numpy()


SWEEPS = [  # (name, ours, torch's, points, float64 relative bound, absolute floor)
    ("erfc", tinyattn.erfc, torch.erfc, _grid(-6, 27.2), 2e-14, 1e-300),
    ("erfcx", tinyattn.special.erfcx, torch.special.erfcx,
     np.concatenate([_grid(-26, 30), np.logspace(1, 5, 100)]), 1e-13, 0),
    ("erfinv", tinyattn.erfinv, torch.erfinv,
     np.concatenate([_grid(-1, 1), 1 - np.logspace(-16, -1, 200), np.logspace(-300, -1, 50)]),
     1e-14, 0),
    ("lgamma", tinyattn.lgamma, torch.lgamma, _grid(-10.5, 50, avoid_integers=True), 1e-12, 1e-15),
    ("digamma", tinyattn.digamma, torch.digamma, _grid(-10.5, 50, avoid_integers=True), 2e-12,
     1e-14),
    ("trigamma", lambda t: tinyattn.polygamma(1, t), lambda t: torch.polygamma(1, t),
     _grid(-10.5, 50, avoid_integers=True), 5e-10, 0),
    ("polygamma2", lambda t: tinyattn.polygamma(2, t), lambda t: torch.polygamma(2, t),
     _grid(-10.5, 50, avoid_integers=True), 1e-13, 0),
    ("polygamma5", lambda t: tinyattn.polygamma(5, t), lambda t: torch.polygamma(5, t),
     _grid(0.01, 50), 1e-13, 0),
    # torch's ndtr is (1 + erf(x / sqrt 2)) / 2: only absolutely accurate (1e-16) below 0;
    # ours is relatively accurate there (test_ndtr_lower_tail_is_relatively_accurate)
    ("ndtr", tinyattn.special.ndtr, torch.special.ndtr, _grid(-37, 9), 1e-13, 2e-16),
    ("ndtri", tinyattn.special.ndtri, torch.special.ndtri,
     np.concatenate([_grid(0, 1), np.logspace(-320, -1, 300)]), 1e-14, 0),
    ("log_ndtr", tinyattn.special.log_ndtr, torch.special.log_ndtr, _grid(-1e4, 40), 1e-12, 0),
    ("i0", tinyattn.special.i0, torch.special.i0, _grid(-700, 700), 5e-15, 0),
    ("i0e", tinyattn.special.i0e, torch.special.i0e, _grid(-800, 800), 5e-15, 0),
    ("i1", tinyattn.special.i1, torch.special.i1, _grid(-700, 700), 5e-15, 0),
    ("i1e", tinyattn.special.i1e, torch.special.i1e, _grid(-800, 800), 5e-15, 0),
    ("entr", tinyattn.special.entr, torch.special.entr, _grid(-1, 100), 1e-15, 0),
]  # fmt: skip


@pytest.mark.parametrize("case", SWEEPS, ids=[s[0] for s in SWEEPS])
def test_value_sweep_against_torch(case):
    name, ours_fn, torch_fn, x, bound, floor = case
    ours = ours_fn(tinyattn.tensor(x)).numpy()
    theirs = _ref(torch_fn, x)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    err = np.abs(ours[finite] - theirs[finite])
    assert (err <= bound * np.abs(theirs[finite]) + floor).all(), (name, err.max())
    # float32: our float64 value rounded once; torch computes in float32 (a few ulps, and
    # near poles and roots much more: those points are left out of the torch comparison)
    x32 = x.astype(np.float32)
    ours32 = ours_fn(tinyattn.tensor(x32)).numpy()
    assert ours32.dtype == np.float32
    with np.errstate(over="ignore"):  # (i0, i1: beyond float32's range, inf as torch)
        exact = ours_fn(tinyattn.tensor(x32.astype(np.float64))).numpy().astype(np.float32)
    np.testing.assert_array_equal(ours32, exact)
    theirs32 = _ref(torch_fn, x32, torch.float32)
    ok = np.isfinite(theirs32) & np.isfinite(ours32) & (np.abs(theirs32) > 1e-30)
    ok &= np.abs(x32 - np.round(x32)) > 0.05
    np.testing.assert_allclose(ours32[ok], theirs32[ok], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "name", ["erfc", "erfinv", "lgamma", "digamma", "ndtri", "log_ndtr", "i0", "i1e"]
)
def test_special_values_as_torch(name):
    x = np.array([0.0, -0.0, 1.0, -1.0, -2.0, 2.0, np.inf, -np.inf, np.nan, 1e308, -1e20, 1e-300])
    ours = getattr(tinyattn, name, getattr(tinyattn.special, name, None))(tinyattn.tensor(x))
    theirs = getattr(torch, name, getattr(torch.special, name, None))(torch.tensor(x)).numpy()
    ours = ours.numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=0)


def test_ndtr_lower_tail_is_relatively_accurate():
    x = _grid(-37, 0)
    ours = tinyattn.special.ndtr(tinyattn.tensor(x)).numpy()
    exact = np.exp(_ref(torch.special.log_ndtr, x))  # torch's log_ndtr is accurate here
    np.testing.assert_allclose(ours, exact, rtol=1e-12, atol=0)


def test_polygamma_special_values_as_torch():
    x = np.array([0.0, 1.0, 2.5, -2.5, np.inf, np.nan, 1e308])
    for n in (1, 2, 3):
        ours = tinyattn.polygamma(n, tinyattn.tensor(x)).numpy()
        theirs = torch.polygamma(n, torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-9 if n == 1 else 1e-12, atol=0)


def test_zeta_against_torch():
    inf = np.inf
    s = np.array([2.0, 3.0, 4.5, 1.0, 0.5, 3.0, 3.0, 7.0, 2.0, 2.0, inf, np.nan])
    q = np.array([1.0, 0.3, 20.0, 1.0, 1.0, -2.0, -2.5, 1e-3, inf, -inf, 2.0, 1.0])
    ours = tinyattn.special.zeta(tinyattn.tensor(s), tinyattn.tensor(q)).numpy()
    theirs = torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    assert tinyattn.special.zeta(tinyattn.tensor([2.0]), 1.0).item() == pytest.approx(np.pi**2 / 6)


def test_namespace_names_are_torchs():
    names = (
        "erf erfc erfcx erfinv expit logit log_softmax softmax logsumexp gammaln digamma psi "
        "polygamma multigammaln i0 i0e i1 i1e ndtr ndtri log_ndtr sinc round xlogy xlog1py "
        "entr exp2 expm1 log1p zeta"
    ).split()
    x = np.array([0.2, 0.7, 0.4])
    for name in names:
        assert hasattr(torch.special, name), name
        fn_o, fn_t = getattr(tinyattn.special, name), getattr(torch.special, name)
        if name in ("log_softmax", "softmax", "logsumexp"):
            args = (0,)
        elif name in ("polygamma",):
            o, t = fn_o(2, tinyattn.tensor(x)), fn_t(2, torch.tensor(x))
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)
            continue
        elif name == "multigammaln":
            args = (1,)
        elif name in ("xlogy", "xlog1py", "zeta"):
            o, t = fn_o(tinyattn.tensor(x + 1), 0.5), fn_t(torch.tensor(x + 1), 0.5)
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)
            continue
        else:
            args = ()
        o, t = fn_o(tinyattn.tensor(x), *args), fn_t(torch.tensor(x), *args)
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12, err_msg=name)


def test_tensor_methods_and_inplace():
    x = np.array([0.3, 0.6, 1.9])
    for name in ("erfc", "erfinv", "lgamma", "digamma", "i0"):
        o = getattr(tinyattn.tensor(x / 2), name)().numpy()
        t = getattr(torch.tensor(x / 2), name)().numpy()
        np.testing.assert_allclose(o, t, rtol=1e-12)
        a, b = tinyattn.tensor(x / 2), torch.tensor(x / 2)
        getattr(a, name + "_")()
        getattr(b, name + "_")()
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    a, b = tinyattn.tensor(x + 1), torch.tensor(x + 1)
    np.testing.assert_allclose(a.polygamma(2).numpy(), b.polygamma(2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.mvlgamma(2).numpy(), b.mvlgamma(2).numpy(), rtol=1e-12)
    a.polygamma_(1)
    b.polygamma_(1)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9)
    a, b = tinyattn.tensor(x + 1), torch.tensor(x + 1)
    a.mvlgamma_(2)
    b.mvlgamma_(2)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_inplace_gradient_flows():
    x = tinyattn.tensor([0.3, 0.6], dtype=tinyattn.float64, requires_grad=True)
    y = x * 1
    y.lgamma_()
    y.sum().backward()
    xt = torch.tensor([0.3, 0.6], dtype=torch.float64, requires_grad=True)
    yt = xt * 1
    yt.lgamma_()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_integer_inputs_promote_as_torch():
    for name in ("erfc", "erfinv", "lgamma", "digamma", "i0"):
        o = getattr(tinyattn, name)(tinyattn.tensor([1, 2, 3]))
        t = getattr(torch, name)(torch.tensor([1, 2, 3]))
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    assert tinyattn.polygamma(1, tinyattn.tensor([1, 2])).dtype == tinyattn.float32


def test_bad_arguments_raise_naming_them():
    x = tinyattn.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="'n' must be non-negative"):
        tinyattn.polygamma(-1, x)
    with pytest.raises(TypeError, match="'n' must be int"):
        tinyattn.polygamma(1.5, x)
    with pytest.raises(TypeError, match="'p' must be int"):
        tinyattn.mvlgamma(x, 2.0)
    with pytest.raises(RuntimeError, match=r"greater than \(p-1\)/2"):
        tinyattn.mvlgamma(x, 4)
    with pytest.raises(TypeError, match="'input' must be a Tensor"):
        tinyattn.erfc([1.0])
    with pytest.raises(RuntimeError):  # torch raises too
        torch.polygamma(-1, torch.tensor([1.0]))


def test_runs_without_scipy():
    """Every special function works with scipy made unimportable (numba itself may import
    scipy when it is installed; nothing here needs it)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "import tinyattn, tinyattn.special as s\n"
        "x = tinyattn.tensor([0.5, 3.0])\n"
        "for n in s.__all__:\n"
        "    f = getattr(s, n)\n"
        "    if n in ('polygamma',): f(2, x)\n"
        "    elif n in ('xlogy', 'xlog1py', 'zeta'): f(x + 1, 1.0)\n"
        "    elif n in ('log_softmax', 'softmax', 'logsumexp'): f(x, 0)\n"
        "    elif n in ('multigammaln',): f(x, 1)\n"
        "    else: f(x)\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
