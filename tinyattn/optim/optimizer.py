"""``Optimizer``: parameter groups, per-parameter state and torch-format state dicts.

An optimizer holds a list of *parameter groups*: dicts with a ``"params"`` list
and the options (``lr``, ``weight_decay`` ...) that apply to those parameters.
Options missing from a group take the optimizer's ``defaults``. Per-parameter
buffers (momentum, Adam's moments) live in ``state[param]``.

``state_dict()`` has torch's layout, parameters replaced by integer ids in the
order they appear across the groups::

    {"state": {0: {"momentum_buffer": tensor}, ...},
     "param_groups": [{"lr": 0.1, ..., "params": [0, 1]}, ...]}

Updates run under ``no_grad`` and write into the parameters' memory (the
version counter is bumped, exactly as an in-place op would), so a graph that
saved a parameter before the step refuses to backward through stale values.

Subclassing works as in torch::

    >>> import tinyattn as torch
    >>> class PlainSGD(torch.optim.Optimizer):
    ...     def __init__(self, params, lr=0.1):
    ...         super().__init__(params, dict(lr=lr))
    ...     @torch.no_grad()
    ...     def step(self, closure=None):
    ...         for group in self.param_groups:
    ...             for p in group["params"]:
    ...                 if p.grad is not None:
    ...                     p.add_(p.grad, alpha=-group["lr"])
"""

from __future__ import annotations

import copy
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..core._dtype import float64, get_default_dtype
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from . import _hooks
from ._hooks import (
    RemovableHandle,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

__all__ = [
    "Optimizer",
    "required",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
]


class _RequiredParameter:
    """Marker for an option without default that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


_HOOK_DICTS = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    return type_name(obj)


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``).

    Parameters
    ----------
    params : iterable of Tensor, of (name, Tensor) pairs, or of dicts
        The tensors to optimize, or parameter groups: dicts with a ``"params"``
        entry and per-group options overriding ``defaults``.
    defaults : dict
        Option values used by groups that do not set them.

    Subclasses implement ``step``; they read options from ``self.param_groups``
    and keep buffers in ``self.state[p]`` (a dict per parameter, created on
    first access).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooks.hooked_step(step)  # the step hooks run around every step

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: dict[int, Callable] = OrderedDict()
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)}"
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        """What ``save(optimizer)`` keeps, as torch's: the options, the state and the groups
        (not the hooks, nor a scheduler's wrapper of ``step``)."""
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in _HOOK_DICTS:  # (a loaded optimizer starts with no hooks, as torch's)
            self.__dict__.setdefault(name, OrderedDict())

    # -- groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize, e.g. unfrozen layers."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type_name(param_group)}")
        param_group = dict(param_group)
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}"
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        if self.param_groups and ("param_names" in param_group) != (
            "param_names" in self.param_groups[0]
        ):
            current = "with" if "param_names" in param_group else "without"
            raise ValueError(
                "all optimizer param groups should be with/without names. cannot add param "
                f"group {current} names to the optimizer"
            )
        self.param_groups.append(param_group)

    # -- gradients and steps --------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None, or to zeros in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    p.grad._data[...] = 0
                    p.grad._bump_version()

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform one optimization step (implemented by subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None):
        """Re-evaluate the model (``closure``) with gradients enabled, as torch's ``step`` does."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- hooks ----------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before each ``step``; it may return
        ``(new_args, new_kwargs)`` to replace the arguments (``args[0]`` is the optimizer)."""
        return _hooks.add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return _hooks.add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` at the start of ``state_dict()``."""
        return _hooks.add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` on the finished state dict; a returned
        dict replaces it."""
        return _hooks.add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` before loading; a returned dict is loaded
        instead."""
        return _hooks.add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` after ``load_state_dict`` has loaded."""
        return _hooks.add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _run_hooks(self, name: str, *args: Any) -> Any:
        """Call the hooks of store ``name``; the last non-None result of a state-dict
        hook (which replaces the dict it got) is threaded through and returned."""
        value = args[0] if args else None
        for hook in list(getattr(self, name, {}).values()):
            result = hook(self, value) if args else hook(self)
            if result is not None and args:
                value = result
        return value

    # -- state dicts ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in torch's format (parameters referred to by integer ids).

        The state tensors are returned by reference, as in torch: save or copy the
        dict before stepping again if you need a snapshot.
        """
        self._run_hooks("_optimizer_state_dict_pre_hooks")
        param_ids: dict[int, int] = {}
        start = 0
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                param_ids.setdefault(id(p), i)
            packed["params"] = [param_ids[id(p)] for p in group["params"]]
            start += len(packed["params"])
            packed_groups.append(packed)
        packed_state = {
            (param_ids[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": packed_groups}
        return self._run_hooks("_optimizer_state_dict_post_hooks", state_dict)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by ``state_dict()`` (of this optimizer class, same groups).

        Tensors in the state are copied and cast to their parameter's floating dtype
        (except ``step``); the groups' options are replaced by the saved ones.
        """
        state_dict = self._run_hooks("_optimizer_load_state_dict_pre_hooks", state_dict)
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ValueError(
                "load_state_dict: expected a dict with 'state' and 'param_groups' entries, got "
                f"{type_name(state_dict)}"
                + (
                    f" with keys {sorted(map(str, state_dict))}"
                    if isinstance(state_dict, dict)
                    else ""
                )
            )
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(
                "loaded state dict has a different number of parameter groups "
                f"({len(saved_groups)}) than the optimizer ({len(groups)})"
            )
        for i, (g, s) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group (index {i}, "
                    f"{len(s['params'])} params) that doesn't match the size of optimizer's "
                    f"group ({len(g['params'])} params)"
                )
        id_map = {
            saved_id: p
            for g, s in zip(groups, saved_groups)
            for saved_id, p in zip(s["params"], g["params"])
        }

        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast_state(param, v, key=None)
            else:
                state[k] = copy.deepcopy(v)
        self.state = state

        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.param_groups = new_groups
        self._run_hooks("_optimizer_load_state_dict_post_hooks")

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _cast_state(param: Tensor, value, key):
    """A copy of a saved state value; tensors cast to the parameter's dtype (not ``step``).

    Tensors may be tinyattn's, NumPy arrays, or another library's (torch's, from its
    ``state_dict()`` in memory): those are converted through NumPy, so a state dict from
    torch resumes here without torch-specific code.
    """
    foreign = _foreign_array(value)
    if foreign is not None:
        value = foreign
    if isinstance(value, Tensor):
        data = value._data
        if key != "step" and param.is_floating_point():
            data = data.astype(param._data.dtype, copy=False)
        return Tensor._make(np.array(data, copy=True))
    if isinstance(value, np.ndarray):
        return _cast_state(param, Tensor._make(value), key)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v, key=key) for v in value)
    return copy.deepcopy(value)


def _foreign_array(value) -> np.ndarray | None:
    """A NumPy copy of another library's tensor (anything with ``__array__``), else None."""
    if isinstance(value, (Tensor, np.ndarray, np.generic)) or not hasattr(value, "__array__"):
        return None
    for method in ("detach", "cpu"):  # torch: leave the graph and the device first
        if callable(getattr(value, method, None)):
            value = getattr(value, method)()
    if str(getattr(value, "dtype", "")).endswith("bfloat16"):  # NumPy has no bfloat16
        value = value.float()
    array = value.numpy() if callable(getattr(value, "numpy", None)) else np.asarray(value)
    return np.array(array, copy=True)


def _write(param: Tensor, values: np.ndarray) -> None:
    """Store ``values`` into ``param``'s memory and bump its version (an in-place update)."""
    np.copyto(param._data, values, casting="same_kind")
    param._bump_version()


def _check_no_unsupported(name: str, **flags: Any) -> None:
    """Reject torch options that need machinery tinyattn does not have (CUDA graphs, fusing)."""
    for flag, value in flags.items():
        if value:
            raise NotImplementedError(
                f"{name}: {flag}=True is not supported by tinyattn (CPU, single-tensor updates)"
            )


def _check_hyper(ok: bool, what: str, value: Any) -> None:
    """Raise torch's message for a hyper-parameter out of range, e.g. ``Invalid learning rate: -1``."""
    if not ok:
        raise ValueError(f"Invalid {what}: {value}")


def _lr_value(lr: float | Tensor) -> float:
    """A learning rate given as a Python number or a one-element tensor, as a float."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return lr.item()
    return lr


def _grad_of(optimizer: Optimizer, p: Tensor, maximize: bool) -> np.ndarray:
    """``p``'s gradient as an array (negated when maximizing), checked against ``p``'s shape."""
    grad = p.grad._data
    if grad.shape != p._data.shape:
        raise RuntimeError(
            f"{type(optimizer).__name__}.step: the gradient of a parameter of shape "
            f"{list(p.shape)} has shape {list(grad.shape)} (expected the same)"
        )
    return -grad if maximize else grad


# 0-d state of the built-in optimizers; every other state tensor has its parameter's shape
_SCALAR_STATE = frozenset({"step", "mu_product", "eta", "mu"})


def _counted_step(
    optimizer: Optimizer, p: Tensor, group: dict[str, Any], *init_args: Any
) -> tuple[np.ndarray, dict[str, Any]]:
    """The per-parameter start of a step: ``p``'s gradient (negated under ``maximize``)
    and its state, made on first use (``optimizer._init_state(p, *init_args)``), checked
    against ``p``'s shape and with its ``step`` counted."""
    grad = _grad_of(optimizer, p, group["maximize"])
    state = optimizer._init_state(p, *init_args)  # type: ignore[attr-defined]
    _check_state_shapes(optimizer, p, state)
    state["step"]._data += 1
    return grad, state


def _check_state_shapes(optimizer: Optimizer, p: Tensor, state: dict[str, Any]) -> None:
    """Refuse per-element state of another shape than ``p`` (a state dict loaded from
    another model): NumPy would broadcast it or fail obscurely, the numba kernel would
    read and write past its end. torch fails at the step as well."""
    for key, value in state.items():
        if key in _SCALAR_STATE or not isinstance(value, Tensor):
            continue
        if value._data.shape != p._data.shape:
            raise RuntimeError(
                f"{type(optimizer).__name__}.step: state {key!r} of a parameter of shape "
                f"{list(p.shape)} has shape {list(value.shape)} (expected the same; was the "
                "state dict saved for other parameters?)"
            )


def _lerp(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """``start + weight * (end - start)``, rounded as torch's ``lerp`` (which computes
    ``end - (1 - weight) * (end - start)`` once ``weight >= 0.5``)."""
    diff = end - start
    if weight < 0.5:
        return start + weight * diff
    return end - (1.0 - weight) * diff


def _zeros_like(p: Tensor) -> Tensor:
    return Tensor._make(np.zeros_like(p._data))


def _scalar_dtype() -> type[np.floating]:
    """The dtype of 0-d state (``step``, ``mu_product`` ...): torch's, float64 when the
    default dtype is float64, else float32."""
    return np.float64 if get_default_dtype() is float64 else np.float32


def _scalar(value: float) -> Tensor:
    """A 0-d state tensor (``step``, ``mu_product`` ...) of ``_scalar_dtype()``, as torch's."""
    return Tensor._make(np.array(value, dtype=_scalar_dtype()))


def _bump_versions(p: Tensor, state: dict[str, Any]) -> None:
    """Record that a step wrote ``p`` and its state tensors in place."""
    p._bump_version()
    for value in state.values():
        if isinstance(value, Tensor):
            value._bump_version()
