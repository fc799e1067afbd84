"""``Embedding``: a lookup table of ``num_embeddings`` vectors of size ``embedding_dim``;
``EmbeddingBag``: the sum, mean or max of bags of its rows."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._args import int_arg, size_arg
from .module import Module


class Embedding(Module):
    """Integer indices (*) -> rows of ``weight`` (*, embedding_dim).

    weight (num_embeddings, embedding_dim) ~ N(0, 1); row ``padding_idx`` is zero
    and receives no gradient.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        num_embeddings = size_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = size_arg("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            padding_idx = int_arg("Embedding", "padding_idx", padding_idx)
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError(
                    f"Embedding: padding_idx={padding_idx} must be within "
                    f"num_embeddings={num_embeddings}"
                )
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        if sparse:
            raise NotImplementedError(
                "Embedding: sparse=True (a sparse gradient) is not supported by tinyattn: it has "
                "no sparse tensors; leave sparse=False for a dense gradient"
            )
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(
                empty((num_embeddings, embedding_dim), dtype=dtype, device=device),
                requires_grad=not _freeze,
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(
                    f"Embedding: _weight has shape {list(_weight.shape)}, expected "
                    f"[{num_embeddings}, {embedding_dim}]"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        """Zero row ``padding_idx`` of the weight (torch's ``reset_parameters`` step)."""
        if self.padding_idx is not None:
            with no_grad():
                self.weight._data[self.padding_idx] = 0

    def forward(self, input: Tensor) -> Tensor:
        """``y = weight[input]``: integer input (*) -> (*, embedding_dim).

        ``d weight[v] = sum of g[i] over the positions i with input[i] == v`` (0 for
        ``padding_idx``); no gradient to ``input``.
        """
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
            self.scale_grad_by_freq,
        )  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding holding ``embeddings`` (2-D); frozen (no grad) unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError(
                f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                f"{list(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)  # fmt: skip


class EmbeddingBag(Module):
    """Bags of indices -> the sum, mean or max of their rows of ``weight``: (B, embedding_dim).

    weight (num_embeddings, embedding_dim) ~ N(0, 1); row ``padding_idx`` is zero, and
    entries equal to ``padding_idx`` are left out of their bags.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_embeddings = size_arg("EmbeddingBag", "num_embeddings", num_embeddings)
        self.embedding_dim = size_arg("EmbeddingBag", "embedding_dim", embedding_dim)
        if scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "EmbeddingBag: scale_grad_by_freq and sparse are not supported by tinyattn"
            )
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.mode, self.include_last_offset = mode, include_last_offset
        if padding_idx is not None:
            padding_idx = int_arg("EmbeddingBag", "padding_idx", padding_idx)
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise AssertionError(
                    f"EmbeddingBag: padding_idx={padding_idx} must be within "
                    f"num_embeddings={self.num_embeddings}"
                )
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            self.weight = Parameter(empty(shape, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != shape:
                raise AssertionError(
                    f"EmbeddingBag: _weight has shape {list(_weight.shape)}, expected {list(shape)}"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        """Zero row ``padding_idx`` of the weight (torch's ``reset_parameters`` step)."""
        if self.padding_idx is not None:
            with no_grad():
                self.weight._data[self.padding_idx] = 0

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
        """Bags of ``input`` (B, L), or (N,) cut at ``offsets`` -> (B, embedding_dim).

        Gradient (``bag(i)`` the bag of entry ``i``): sum mode
        ``d weight[v] = sum over input[i] == v of psw[i] * g[bag(i)]``; mean divides by the
        bag's count; max sends ``g[b, d]`` to the row of bag ``b``'s first maximum in column d.

        Composes: F.embedding_bag
        """
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            max_norm=self.max_norm,
            norm_type=self.norm_type,
            mode=self.mode,
            per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset,
            padding_idx=self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag holding ``embeddings`` (2-D); frozen (no grad) unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError(
                f"EmbeddingBag.from_pretrained: embeddings must be 2-D, got shape "
                f"{list(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        bag = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            _weight=embeddings,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad_(not freeze)
        return bag
