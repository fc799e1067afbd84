"""Weight normalisation, the older hook-based form: ``weight = g * v / ||v||`` (Salimans & Kingma, 2016).

``weight_norm(module)`` replaces the parameter ``weight`` by two parameters,
``weight_g`` (the norms, one per slice along ``dim``) and ``weight_v`` (the
direction), and a forward pre-hook recomputes ``module.weight`` from them before
each call. torch deprecates it in favour of
``nn.utils.parametrizations.weight_norm``; so does tinyattn, with torch's warning.
"""

from __future__ import annotations

import warnings

from ...linalg import vector_norm
from ...tensor_api.tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """torch's ``norm_except_dim(v, 2, dim)``: the 2-norm of each slice ``v.select(dim, i)``.

    The result has ``v``'s shape with every dimension but ``dim`` set to 1;
    ``dim = -1`` means the norm of the whole tensor (a 0-d result), as torch's.
    """
    if dim == -1:
        return vector_norm(v)
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(
            f"weight_norm: dim out of range (expected to be in range of [{-v.ndim}, "
            f"{v.ndim - 1}] for a weight of shape {list(v.shape)}, but got {dim})"
        )
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    if not others:
        return v.abs()
    return vector_norm(v, 2, others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """torch's ``_weight_norm``: ``w = v * (g / norm_except_dim(v, 2, dim))``.

    Gradients (through the composed ops): ``dg = sum(dw * v) / ||v||`` per slice and
    ``dv = (g / ||v||) * (dw - (sum(dw * v) / ||v||^2) v)``.
    """
    return v * (g / _norm_except_dim(v, dim))


class WeightNorm:
    """The forward pre-hook that sets ``module.<name> = g * v / ||v||`` before each call."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn(
            "`torch.nn.utils.weight_norm` is deprecated in favor of "
            "`torch.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying weight normalization"
            )
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` with parameters ``<name>_g`` and ``<name>_v``.

    ``dim`` is the dimension kept by the norm (one ``g`` per output slice by default);
    ``dim=None`` uses one norm over the whole tensor. Warns ``FutureWarning`` as torch.
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Fold ``<name>_g`` and ``<name>_v`` back into one parameter ``<name>`` and drop the hook."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
