"""L-BFGS: quasi-Newton steps from a short history of gradient differences, with a closure.

All parameters are handled as one flat vector ``x`` (their concatenation); the
history holds pairs ``s = x_{k+1} - x_k`` and ``y = g_{k+1} - g_k``. The search
direction is ``d = -H g``, with ``H`` (the inverse-Hessian estimate) applied by the
two-loop recursion (Nocedal & Wright, Algorithm 7.4). Steps are ``lr * d``, or, with
``line_search_fn="strong_wolfe"``, a step length satisfying the strong Wolfe
conditions (Algorithms 3.5 and 3.6, cubic interpolation). Same iteration, tolerances
and state as ``torch.optim.LBFGS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import Optimizer, _check_hyper, _lr_value

_ARRAY_KEYS = ("d", "prev_flat_grad", "H_diag")
_LIST_KEYS = ("old_dirs", "old_stps", "ro", "al")


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2``,
    clipped to ``bounds`` (default: between x1 and x2); their midpoint if it has none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, low), high)


def _bracket(obj_func, x, t, d, f, g, gtd, c1, c2, max_ls):
    """Phase 1 of the strong-Wolfe search: grow ``t`` until an interval brackets a point
    satisfying the conditions (or ``t`` satisfies them). Returns the bracket's lists
    ``ts, fs, gs, gtds``, whether ``t`` is already done, the evaluations and iterations."""
    f_new, g_new = obj_func(x, t, d)
    evals, gtd_new = 1, g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            found = ([t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new])
            return (*found, False, evals, ls_iter)
        if abs(gtd_new) <= -c2 * gtd:
            return [t], [f_new], [g_new], [gtd_new], True, evals, ls_iter
        if gtd_new >= 0:  # passed a minimum: it lies between t_prev and t
            found = ([t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new])
            return (*found, False, evals, ls_iter)
        # extrapolate: the cubic's minimiser within [t + 0.01 (t - t_prev), 10 t]
        bounds = (t + 0.01 * (t - t_prev), t * 10)
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=bounds)
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.copy(), gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    return [0, t], [f, f_new], [g, g_new], None, False, evals, ls_iter


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length ``t`` along ``d`` with ``f(t) <= f + c1 t gtd`` and
    ``|f'(t)| <= -c2 gtd``: bracket, then zoom by safeguarded cubic interpolation.
    Returns ``(f_new, g_new, t, evaluations)``."""
    d_norm = np.abs(d).max()
    ts, fs, gs, gtds, done, evals, ls_iter = _bracket(
        obj_func, x, t, d, f, g.copy(), gtd, c1, c2, max_ls
    )
    insuf_progress = False
    low, high = (0, 1) if fs[0] <= fs[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(ts[1] - ts[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(ts[0], fs[0], gtds[0], ts[1], fs[1], gtds[1])
        # keep t at least 10% of the interval away from its ends; after a step that
        # made too little progress, move it there
        eps = 0.1 * (max(ts) - min(ts))
        if min(max(ts) - t, t - min(ts)) < eps:
            if insuf_progress or t >= max(ts) or t <= min(ts):
                t = max(ts) - eps if abs(t - max(ts)) < abs(t - min(ts)) else min(ts) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= fs[low]:
            ts[high], fs[high], gs[high], gtds[high] = t, f_new, g_new.copy(), gtd_new
            low, high = (0, 1) if fs[0] <= fs[1] else (1, 0)
            continue
        if abs(gtd_new) <= -c2 * gtd:
            done = True
        elif gtd_new * (ts[high] - ts[low]) >= 0:
            ts[high], fs[high], gs[high], gtds[high] = ts[low], fs[low], gs[low], gtds[low]
        ts[low], fs[low], gs[low], gtds[low] = t, f_new, g_new.copy(), gtd_new
    return fs[low], gs[low], ts[low], evals


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
    """``d = -H g`` by the two-loop recursion over the stored ``(y, s)`` pairs."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q = q + (-al[i]) * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r = r + (al[i] - be_i) * old_stps[i]
    return r


class LBFGS(Optimizer):
    r"""L-BFGS (``torch.optim.LBFGS``): up to ``max_iter`` quasi-Newton iterations per ``step``.

    ``step(closure)`` needs a closure that clears the gradients, computes the loss,
    calls ``backward()`` and returns the loss; it is called once per function evaluation.
    Each iteration, with ``g`` the flat gradient and ``x`` the flat parameters::

        y = g - g_prev;  s = t_prev * d_prev;   store (y, s) if y.s > 1e-10 (keep history_size)
        H_diag = y.s / y.y
        d = -H g                   (two-loop recursion; d = -g on the first iteration)
        t = lr * min(1, 1 / sum|g|) on the very first iteration, else lr
        x = x + t * d              (t from the strong-Wolfe search if line_search_fn)

    Stops when ``max|g| <= tolerance_grad``, ``max|t d| <= tolerance_change``, the loss
    changes less than ``tolerance_change``, or ``max_iter``/``max_eval`` is reached.

    Parameters
    ----------
    params : iterable of Tensor
        One parameter group only (as torch).
    lr : float, default 1
    max_iter : int, default 20
    max_eval : int or None, default ``max_iter * 5 // 4``
    tolerance_grad : float, default 1e-7
    tolerance_change : float, default 1e-9
    history_size : int, default 100
    line_search_fn : None or "strong_wolfe"

    State (of the first parameter, as torch): ``func_evals``, ``n_iter``, ``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([3.0, -1.0], dtype=torch.float64, requires_grad=True)
    >>> opt = torch.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 1.0) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 6) for v in w.tolist()]
    [1.0, 1.0]
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(
                f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}"
            )
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> np.ndarray:
        """Every parameter's gradient (zeros where None), concatenated into one vector."""
        return np.concatenate(
            [
                np.zeros(p._data.size, p._data.dtype) if p.grad is None else p.grad._data.ravel()
                for p in self._params
            ]
        )

    def _add_grad(self, step_size, update: np.ndarray) -> None:
        """``x = x + step_size * update`` on the flat view of the parameters."""
        offset = 0
        for p in self._params:
            n = p._data.size
            p._data += (step_size * update[offset : offset + n]).reshape(p._data.shape)
            p._bump_version()
            offset += n

    def _set_param(self, values: list[np.ndarray]) -> None:
        for p, value in zip(self._params, values):
            np.copyto(p._data, value)
            p._bump_version()

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t d``; the parameters are put back to ``x``."""
        self._add_grad(t, d)
        loss = float(self._evaluate(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def _direction(self, mem: dict, flat_grad: np.ndarray, n_iter: int) -> None:
        """Update the history with the last step and set ``mem["d"]`` to ``-H g``."""
        if n_iter == 1:
            mem.update(d=-flat_grad, old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return
        y = flat_grad - mem["prev_flat_grad"]
        s = mem["d"] * mem["t"]
        ys = y.dot(s)
        if ys > 1e-10:
            if len(mem["old_dirs"]) == self.param_groups[0]["history_size"]:
                for key in ("old_dirs", "old_stps", "ro"):
                    mem[key].pop(0)
            mem["old_dirs"].append(y)
            mem["old_stps"].append(s)
            mem["ro"].append(1.0 / ys)
            mem["H_diag"] = ys / y.dot(y)
        if mem.get("al") is None:
            mem["al"] = [None] * self.param_groups[0]["history_size"]
        mem["d"] = _two_loop(
            flat_grad, mem["old_dirs"], mem["old_stps"], mem["ro"], mem["H_diag"], mem["al"]
        )

    def _move(self, closure, mem: dict, loss: float, flat_grad, gtd, evals_left: int, last: bool):
        """Step along ``d`` (line search or fixed ``t``); returns the new loss, gradient,
        whether it is optimal, and the evaluations spent."""
        group = self.param_groups[0]
        t, d = mem["t"], mem["d"]
        if group["line_search_fn"] is not None:
            x_init = [p._data.copy() for p in self._params]

            def obj_func(x, t, d):
                return self._directional_evaluate(closure, x, t, d)

            loss, flat_grad, t, evals = _strong_wolfe(
                obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=evals_left
            )
            mem["t"] = t
            self._add_grad(t, d)
            return loss, flat_grad, np.abs(flat_grad).max() <= group["tolerance_grad"], evals
        self._add_grad(t, d)
        if last:  # no evaluation after the last iteration (as torch)
            return loss, flat_grad, False, 0
        loss = float(self._evaluate(closure))
        flat_grad = self._gather_flat_grad()
        return loss, flat_grad, np.abs(flat_grad).max() <= group["tolerance_grad"], 1

    @no_grad()
    def step(self, closure: Callable):  # type: ignore[override]
        """Run up to ``max_iter`` iterations; returns the loss of the first closure call."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_change = group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.size == 0:  # torch fails in max() too; say why
            raise RuntimeError(
                "LBFGS.step: every parameter is empty (0 elements in all), nothing to optimize"
            )
        if np.abs(flat_grad).max() <= group["tolerance_grad"]:
            return orig_loss
        mem = _unpack(state)
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            self._direction(mem, flat_grad, state["n_iter"])
            mem["prev_flat_grad"] = flat_grad.copy()
            mem["prev_loss"] = loss
            if state["n_iter"] == 1:
                mem["t"] = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                mem["t"] = lr
            gtd = flat_grad.dot(mem["d"])
            if gtd > -tolerance_change:  # not a descent direction
                break
            loss, flat_grad, opt_cond, evals = self._move(
                closure, mem, loss, flat_grad, gtd, max_eval - current_evals, n_iter == max_iter
            )
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(mem["d"] * mem["t"]).max() <= tolerance_change:
                break
            if abs(loss - mem["prev_loss"]) < tolerance_change:
                break
        _pack(state, mem)
        return orig_loss


def _unpack(state: dict) -> dict:
    """The history as arrays (state holds Tensors, e.g. after ``load_state_dict``)."""

    def arr(v):
        return v._data if isinstance(v, Tensor) else v

    mem = {key: state.get(key) for key in ("t", "prev_loss")}
    for key in _ARRAY_KEYS:
        mem[key] = arr(state.get(key))
    for key in _LIST_KEYS:
        value = state.get(key)
        mem[key] = None if value is None else [arr(v) for v in value]
    return mem


def _pack(state: dict, mem: dict) -> None:
    """Store the history back into ``state`` as Tensors (torch's state layout)."""

    def wrap(v):
        return Tensor._make(np.asarray(v)) if isinstance(v, (np.ndarray, np.generic)) else v

    state["t"] = mem["t"]
    state["prev_loss"] = mem["prev_loss"]
    for key in _ARRAY_KEYS:
        state[key] = wrap(mem[key])
    for key in _LIST_KEYS:
        if mem[key] is not None:
            state[key] = [wrap(v) for v in mem[key]]
