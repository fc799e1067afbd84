"""``nn.utils.parametrizations``: orthogonal, weight norm and spectral norm as parametrizations (torch's).

Built on :mod:`.parametrize`: the module keeps computing ``module.weight``, now from
``module.parametrizations.weight.original*``; gradients reach the originals through
the tinyattn ops the parametrizations are written in.
"""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.creation.factories import empty
from ...ops.linalg.products import mv, vdot
from ...tensor_api.tensor import Tensor
from ..functional.distance import normalize
from ..modules.module import Module
from . import parametrize
from ._orthogonal import MAPS, _Orthogonal
from .spectral_norm import _default_dim, _normalize_into, _weight_matrix
from .weight_norm import _norm_except_dim, _weight_norm

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` from ``(original0, original1) = (g, v)``.

    ``right_inverse(w) = (norm_except_dim(w, 2, dim), w)``, so registering keeps the weight.
    """

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (Salimans & Kingma, 2016).

    ``g`` is ``module.parametrizations.<name>.original0`` (one norm per slice along
    ``dim``; ``dim=None`` for one norm of the whole tensor) and ``v`` is ``original1``,
    the ``state_dict`` keys torch uses. A state dict saved with the old
    ``nn.utils.weight_norm`` (keys ``<name>_g`` / ``<name>_v``) still loads: a load
    pre-hook renames both keys to the new ones when both are present, as torch's does.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module._register_load_state_dict_pre_hook(_LegacyWeightNormKeys(name))
    return module


class _LegacyWeightNormKeys:
    """Load pre-hook: ``<prefix><name>_g`` / ``_v`` -> ``<prefix>parametrizations.<name>.original0`` / ``1``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        g_key, v_key = f"{prefix}{self.name}_g", f"{prefix}{self.name}_v"
        if g_key in state_dict and v_key in state_dict:
            new = f"{prefix}parametrizations.{self.name}.original"
            state_dict[new + "0"] = state_dict.pop(g_key)
            state_dict[new + "1"] = state_dict.pop(v_key)


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma = u . (W v)`` with ``u``, ``v`` refined by power iteration in training.

    ``W`` is the weight with ``dim`` moved first and the rest flattened. Each
    training-mode call runs ``n_power_iterations`` of ``u <- normalize(W v)``,
    ``v <- normalize(W^T u)`` in place on the buffers ``_u``, ``_v`` (no gradient);
    a 1-D weight is simply normalised. ``right_inverse`` is the identity.
    """

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = _weight_matrix(weight.detach(), self.dim)
            h, w = weight_mat.shape
            with no_grad():
                u = empty(h, dtype=weight.dtype).normal_(0, 1)
                v = empty(w, dtype=weight.dtype).normal_(0, 1)
                self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                _normalize_into(self._u, mv(weight_mat, self._v), self.eps)
                _normalize_into(self._v, mv(weight_mat.t(), self._u), self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = _weight_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # later in-place updates must not change this graph
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its spectral norm (Miyato et al., 2018), as a parametrization.

    The power-iteration vectors are buffers ``parametrizations.<name>.0._u`` / ``._v``
    (random from tinyattn's RNG, then 15 iterations at registration); ``dim`` defaults
    to 1 for transposed convolutions, 0 otherwise.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to have orthonormal rows or columns.

    ``orthogonal_map``: ``"matrix_exp"`` (default for square weights), ``"cayley"`` or
    ``"householder"`` (default otherwise); see :mod:`._orthogonal`. At registration the
    weight becomes the orthogonal factor of its QR decomposition (``diag(R) >= 0``),
    as torch's. With ``use_trivialization`` (default) the buffer
    ``parametrizations.<name>.0.base`` holds that matrix; for non-square weights its
    extra columns are random (NumPy's RNG, not torch's).
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in MAPS:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
