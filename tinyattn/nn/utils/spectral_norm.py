"""Spectral normalisation, the older hook-based form: ``weight = weight_orig / sigma(weight_orig)``.

Miyato et al. (2018). ``sigma`` is the largest singular value of the weight viewed as a
matrix ``W`` (``dim`` moved to the front, the rest flattened), estimated by power
iteration with persistent vectors ``u`` (left) and ``v`` (right)::

    v <- normalize(W^T u),  u <- normalize(W v)     (n_power_iterations times, training only)
    sigma = u . (W v)

``u`` and ``v`` are buffers ``weight_u`` and ``weight_v``, updated in place without
gradient; gradients flow to ``weight_orig`` through ``W / sigma`` with ``u``, ``v`` held
fixed, as torch's.
"""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.creation.factories import empty
from ...ops.linalg.products import dot, mv
from ...tensor_api.tensor import Tensor
from ..functional.distance import normalize
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

_TRANSPOSED_CONVS = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def _weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` with ``dim`` moved to the front and the other dimensions flattened: ``(size(dim), rest)``."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.ndim) if d != dim])
    return weight.reshape(weight.shape[0], -1)


def _normalize_into(out: Tensor, value: Tensor, eps: float) -> None:
    """``out <- value / max(||value||, eps)`` in place (the buffer keeps its identity)."""
    out._data[...] = normalize(value, dim=0, eps=eps)._data
    out._bump_version()


def _default_dim(module: Module) -> int:
    """Output channels are dim 1 of a transposed convolution's weight, dim 0 otherwise."""
    return 1 if any(cls.__name__ in _TRANSPOSED_CONVS for cls in type(module).__mro__) else 0


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name> = <name>_orig / sigma`` before each call."""

    _version: int = 1

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return _weight_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``weight_orig / (u . W v)``, after ``n_power_iterations`` in-place updates of ``u``, ``v`` if asked."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    _normalize_into(v, mv(weight_mat.t(), u), self.eps)
                    _normalize_into(u, mv(weight_mat, v), self.eps)
                u, v = u.clone(), v.clone()  # later in-place updates must not change this graph
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying spectral normalization"
            )
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(empty(h, dtype=weight.dtype).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(empty(w, dtype=weight.dtype).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (torch's hook form).

    Adds parameter ``<name>_orig`` and buffers ``<name>_u``, ``<name>_v`` (the
    ``state_dict`` keys torch uses). ``dim`` defaults to 1 for transposed convolutions,
    0 otherwise. ``u`` and ``v`` start random (tinyattn's RNG) and are refined once per
    training-mode forward.
    """
    if dim is None:
        dim = _default_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Replace ``<name>_orig``, ``<name>_u``, ``<name>_v`` by one parameter ``<name> = orig / sigma``."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
