"""LBFGS: torch's iterates with and without the strong-Wolfe line search, state, errors."""

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")


def _rosenbrock(lib, xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _mlp_setup(lib):
    rng = np.random.default_rng(1)
    params = [
        lib.tensor(rng.standard_normal((4, 8)) * 0.5, requires_grad=True),
        lib.tensor(rng.standard_normal(8) * 0.1, requires_grad=True),
        lib.tensor(rng.standard_normal((8, 3)) * 0.5, requires_grad=True),
        lib.tensor(rng.standard_normal(3), requires_grad=True),  # never gets a gradient
    ]
    rng = np.random.default_rng(2)
    x, y = lib.tensor(rng.standard_normal((16, 4))), lib.tensor(rng.standard_normal((16, 3)))

    def loss_fn():
        h = (x @ params[0] + params[1]).tanh()
        return ((h @ params[2] - y) ** 2).mean()

    return params, loss_fn


def _rosen_setup(lib):
    params = [lib.tensor([-1.5, 2.0], dtype=lib.float64, requires_grad=True)]
    return params, lambda: _rosenbrock(lib, params[0])


PROBLEMS = {"mlp": _mlp_setup, "rosenbrock": _rosen_setup}
CONFIGS = [
    dict(lr=1, max_iter=20),
    dict(lr=0.5, max_iter=7, history_size=3),
    dict(lr=1, max_iter=10, max_eval=8),
    dict(lr=1, line_search_fn="strong_wolfe"),
    dict(lr=1, max_iter=30, history_size=4, line_search_fn="strong_wolfe"),
    dict(lr=0.8, max_iter=5, max_eval=30, line_search_fn="strong_wolfe"),
]


def _run(lib, problem, kwargs, steps):
    params, loss_fn = PROBLEMS[problem](lib)
    opt_mod = optim if lib is tinyattn else torch.optim
    opt = opt_mod.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return [p.detach().numpy().copy() for p in params], losses, opt


@needs_torch
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("kwargs", CONFIGS)
def test_iterates_and_state_match_torch(problem, kwargs):
    # one step = up to max_iter (20-30) quasi-Newton iterations and line searches
    ours, losses_o, opt_o = _run(tinyattn, problem, kwargs, 1)
    theirs, losses_t, opt_t = _run(torch, problem, kwargs, 1)
    assert losses_o == pytest.approx(losses_t, rel=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-10, rtol=0)
    sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
    assert sd_o["param_groups"] == sd_t["param_groups"]
    s_o, s_t = sd_o["state"][0], sd_t["state"][0]
    assert s_o.keys() == s_t.keys()
    assert (s_o["func_evals"], s_o["n_iter"]) == (s_t["func_evals"], s_t["n_iter"])
    assert len(s_o["old_dirs"]) == len(s_t["old_dirs"])
    for key in ("d", "prev_flat_grad"):
        np.testing.assert_allclose(s_o[key].numpy(), s_t[key].numpy(), atol=1e-8, rtol=1e-8)
    for key in ("t", "H_diag", "prev_loss"):
        np.testing.assert_allclose(float(s_o[key]), float(s_t[key]), rtol=1e-8)


@needs_torch
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("kwargs", CONFIGS)
def test_three_steps_take_torchs_path(problem, kwargs):
    """Over 3 steps (up to 90 iterations) rounding differences of order 1e-16 (BLAS dot
    order, gradients) are amplified by the ill-conditioned problems, so the iterates
    agree less tightly; the discrete path (evaluations, iterations) is the same."""
    ours, losses_o, opt_o = _run(tinyattn, problem, kwargs, 3)
    theirs, losses_t, opt_t = _run(torch, problem, kwargs, 3)
    s_o, s_t = opt_o.state[opt_o._params[0]], opt_t.state[opt_t._params[0]]
    assert (s_o["func_evals"], s_o["n_iter"]) == (s_t["func_evals"], s_t["n_iter"])
    np.testing.assert_allclose(losses_o, losses_t, rtol=1e-6, atol=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_rosenbrock_converges_without_torch(line_search_fn):
    lr = 1 if line_search_fn else 0.1
    kwargs = dict(lr=lr, max_iter=50, line_search_fn=line_search_fn)
    params, losses, _ = _run(tinyattn, "rosenbrock", kwargs, 20 if line_search_fn else 60)
    assert losses[-1] < 1e-3 * losses[0]
    if line_search_fn:
        np.testing.assert_allclose(params[0], [1.0, 1.0], atol=1e-4)


def test_quadratic_solved_exactly_with_line_search():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6))
    hessian = tinyattn.tensor(a @ a.T + 6 * np.eye(6))
    b = tinyattn.tensor(rng.standard_normal(6))
    w = tinyattn.zeros(6, dtype=tinyattn.float64, requires_grad=True)
    opt = optim.LBFGS(
        [w], line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-20
    )

    def closure():
        opt.zero_grad()
        loss = 0.5 * (w @ (hessian @ w)) - b @ w
        loss.backward()
        return loss

    opt.step(closure)
    expected = np.linalg.solve(hessian.numpy(), b.numpy())
    np.testing.assert_allclose(w.detach().numpy(), expected, atol=1e-8)


def test_state_dict_round_trip_resumes_identically():
    kwargs = dict(lr=1, max_iter=4, history_size=5, line_search_fn="strong_wolfe")
    full, _, _ = _run(tinyattn, "mlp", kwargs, 4)
    ours, _, opt = _run(tinyattn, "mlp", kwargs, 2)
    params, loss_fn = _mlp_setup(tinyattn)
    with tinyattn.no_grad():
        for p, a in zip(params, ours):
            p.copy_(tinyattn.tensor(a))
    fresh = optim.LBFGS(params, lr=0.01)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["line_search_fn"] == "strong_wolfe"

    def closure():
        fresh.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    for _ in range(2):
        fresh.step(closure)
    for a, p in zip(full, params):
        np.testing.assert_array_equal(a, p.detach().numpy())


def test_errors():
    a, b = tinyattn.zeros(2, requires_grad=True), tinyattn.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.LBFGS([a], lr=-1)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS([a], line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match="needs a closure"):
        optim.LBFGS([a]).step(None)


def test_returns_first_loss_and_stops_at_zero_gradient():
    w = tinyattn.ones(2, dtype=tinyattn.float64, requires_grad=True)
    opt = optim.LBFGS([w])
    calls = []

    def closure():
        opt.zero_grad()
        loss = (w * 0.0).sum() + 3.0
        loss.backward()
        calls.append(1)
        return loss

    assert opt.step(closure).item() == 3.0
    assert len(calls) == 1 and opt.state[w]["func_evals"] == 1
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 1.0])
