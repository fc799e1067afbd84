"""``AdaptiveLogSoftmaxWithLoss``: a softmax over a large vocabulary, cut into frequency
clusters (Grave et al., "Efficient softmax approximation for GPUs").

The head scores the ``cutoffs[0]`` most frequent classes plus one entry per tail cluster;
cluster ``i`` scores its own classes through a low-rank projection (in -> in / div^(i+1) ->
cluster size). ``log p(c) = log p_head(c)`` for a head class and ``log p_head(cluster) +
log p_cluster(c)`` for a tail class.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...foundations.type_names import type_name
from ...ops.creation.factories import zeros
from ...ops.shape.rearrange import cat
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])

CUTOFFS_RULE = (
    "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, "
    "where each value is between 1 and n_classes-1"
)


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: ``forward(input, target)`` -> ``(output, loss)``, with ``output`` the
    log-probability of each target (N,) and ``loss = -mean(output)``.

    Parameters as torch: ``head`` Linear(in_features, cutoffs[0] + n_clusters, bias=head_bias);
    ``tail[i]`` Sequential(Linear(in, in // div_value^(i+1), bias=False), Linear(that,
    cluster size, bias=False)).
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs,
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(f"{CUTOFFS_RULE}; got cutoffs={cutoffs}, n_classes={n_classes}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **kw),
                    Linear(hidden, size, bias=False, **kw),
                )
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def _check(self, input: Tensor, target: Tensor) -> None:
        if not isinstance(input, Tensor) or not isinstance(target, Tensor):
            raise TypeError("AdaptiveLogSoftmaxWithLoss: input and target must be Tensors")
        if target.ndim == 1:
            if input.ndim == 0 or input.shape[0] != target.shape[0]:
                raise RuntimeError(
                    f"AdaptiveLogSoftmaxWithLoss: input and target should have the same size "
                    f"in the batch dimension, got input {list(input.shape)} and target "
                    f"{list(target.shape)}"
                )
            if input.ndim != 2:
                raise RuntimeError(
                    f"AdaptiveLogSoftmaxWithLoss: 1D target tensor expects 2D input tensors, "
                    f"but found inputs with size {list(input.shape)}"
                )
        elif target.ndim == 0:
            if input.ndim != 1:
                raise RuntimeError(
                    f"AdaptiveLogSoftmaxWithLoss: 0D target tensor expects 1D input tensors, "
                    f"but found inputs with size {list(input.shape)}"
                )
        else:
            raise RuntimeError(
                f"AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target "
                f"not supported (target shape {list(target.shape)})"
            )
        if input.shape[-1] != self.in_features:
            raise RuntimeError(
                f"AdaptiveLogSoftmaxWithLoss: input has {input.shape[-1]} features, expected "
                f"in_features={self.in_features} (input shape {list(input.shape)})"
            )

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """``output[n] = log p(target[n] | input[n])`` (N,) and ``loss = -mean(output)``.

        Head rows take ``log_softmax(head(x))[target]``; a tail class adds the cluster's
        entry of the head and ``log_softmax(tail[i](x))[target - cutoffs[i]]``. Gradients:
        those of ``log_softmax`` / ``gather`` / ``linear``
        (``d logits = g * (onehot - softmax(logits))`` per term).

        Composes: F.linear, F.log_softmax, Tensor.gather, Tensor.index_select, Tensor.index_add
        """
        input, target = input_, target_  # torch's keywords end in an underscore
        self._check(input, target)
        batched = target.ndim > 0
        x = input if batched else input.unsqueeze(0)
        tgt = (target._data if batched else target._data[None]).astype(np.int64)
        if tgt.size and (tgt.min() < 0 or tgt.max() > self.n_classes - 1):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{int(tgt.min())}, {int(tgt.max())}] were found."
            )
        head_index = tgt.copy()  # the head entry of each row: its class or its cluster
        output = zeros(tgt.shape[0], dtype=x.dtype)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = np.flatnonzero((tgt >= low) & (tgt < high))
            if rows.size == 0:
                continue
            head_index[rows] = self.shortlist_size + i
            rows_t = Tensor._make(rows)
            logp = F.log_softmax(self.tail[i](x.index_select(0, rows_t)), dim=1)
            local = logp.gather(1, Tensor._make((tgt[rows] - low)[:, None])).squeeze(1)
            output = output.index_add(0, rows_t, local)
        head_logp = F.log_softmax(self.head(x), dim=1)
        output = output + head_logp.gather(1, Tensor._make(head_index[:, None])).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Log-probabilities of every class from the head's output and each tail cluster."""
        head_logp = F.log_softmax(head_output, dim=1)
        parts = [head_logp[:, : self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = head_logp[:, self.shortlist_size + i : self.shortlist_size + i + 1]
            parts.append(F.log_softmax(projection(input), dim=1) + cluster)
        return cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class: (N, in_features) -> (N, n_classes)."""
        if not isinstance(input, Tensor) or input.ndim not in (1, 2):
            got = list(input.shape) if isinstance(input, Tensor) else type_name(input)
            raise RuntimeError(
                f"AdaptiveLogSoftmaxWithLoss.log_prob: expected a 1D or 2D input, got {got}"
            )
        x = input if input.ndim == 2 else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if input.ndim == 2 else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row: (N, in_features) -> (N,) int64."""
        x = input if input.ndim == 2 else input.unsqueeze(0)
        head_output = self.head(x)
        best = np.argmax(head_output._data, axis=1)
        outside = best >= self.shortlist_size  # a cluster won the head: look inside them all
        if outside.any():
            rows = Tensor._make(np.flatnonzero(outside))
            full = self._get_full_log_prob(
                x.index_select(0, rows), head_output.index_select(0, rows)
            )
            best[outside] = np.argmax(full._data, axis=1)
        out = Tensor._make(best.astype(np.int64))
        return out if input.ndim == 2 else out.squeeze(0)
