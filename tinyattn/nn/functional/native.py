"""torch's kernel-level names (``native_layer_norm``, ``native_batch_norm``,
``native_group_norm``, ``native_dropout``, ``native_norm``, ``norm_except_dim``,
``native_channel_shuffle``, ``embedding_renorm_``) and the functional RNN cells
(``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``, torch's argument order
``input, hx, w_ih, w_hh, b_ih=None, b_hh=None``): compositions of existing ops (the
normalisations of ``nn.functional``, linear, sigmoid, tanh ...), no new ``Function``.
"""

from __future__ import annotations

import numpy as np

from ...core._dtype import bool_, float64
from ...core.grad_mode import is_grad_enabled
from ...foundations.type_names import type_name
from ...ops.creation.factories import ones
from ...ops.random.sampling import rand
from ...tensor_api.tensor import Tensor
from .. import functional as F

__all__ = [
    "native_layer_norm", "native_batch_norm", "native_group_norm", "native_dropout",
    "native_norm", "norm_except_dim", "native_channel_shuffle", "embedding_renorm_",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
]  # fmt: skip


def _const(array: np.ndarray) -> Tensor:
    return Tensor._make(np.array(array, order="C"))


def _stats(x: np.ndarray, axes: tuple, eps: float):
    """(mean, 1 / sqrt(biased var + eps)) over ``axes`` (kept), in x's dtype."""
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean.astype(x.dtype), (1 / np.sqrt(var + eps)).astype(x.dtype)


# -- normalisations ------------------------------------------------------------------------------
def native_layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float):
    """``(out, mean, rstd)``: ``layer_norm(input, normalized_shape, weight, bias, eps)`` and
    the statistics over the normalised (last) dims, shaped ``input.shape[:-k] + (1,) * k``
    (not differentiable, as torch's). Composes: layer_norm."""
    out = F.layer_norm(input, normalized_shape, weight, bias, eps)
    k = len(tuple(normalized_shape)) if not isinstance(normalized_shape, int) else 1
    axes = tuple(range(input.ndim - k, input.ndim))
    mean, rstd = _stats(input._data, axes, eps)
    return out, _const(mean), _const(rstd)


def native_batch_norm(
    input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float,
    eps: float,
):  # fmt: skip
    """``(out, save_mean, save_invstd)``: ``batch_norm(...)`` (updating the running stats in
    training) and, in training, the batch mean and ``1 / sqrt(var + eps)`` per channel (C,);
    in evaluation both are empty. Not differentiable (as torch's). Composes: batch_norm."""
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(
            "native_batch_norm: running_mean and running_var must be defined in evaluation mode"
        )
    dtype = input._data.dtype
    if training:
        axes = (0,) + tuple(range(2, input.ndim))
        mean, invstd = _stats(input._data, axes, eps)
        mean, invstd = mean.reshape(-1), invstd.reshape(-1)
    else:
        mean = invstd = np.zeros((0,), dtype)
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, _const(mean), _const(invstd)


def native_group_norm(
    input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int, eps: float
):
    """``(out, mean, rstd)``: ``group_norm(input, group, weight, bias, eps)`` for input
    (N, C, *) with ``HxW`` elements per channel, and the statistics per (sample, group)
    (N, group). All three are differentiable (as torch's): ``mean`` and
    ``rstd = (var + eps)^-1/2`` compose reshape, mean, var, rsqrt."""
    if C % group:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={group}"
        )
    if input.numel() != N * C * HxW:
        raise RuntimeError(
            f"Expected input of N * C * HxW = {N * C * HxW} elements, got input of shape "
            f"{list(input.shape)}"
        )
    out = F.group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, correction=0) + eps).rsqrt()
    return out, mean, rstd


def native_dropout(input: Tensor, p: float, train: bool | None):
    """``(out, mask)``: with ``train`` (True or None) mask ~ Bernoulli(1 - p) (bool) and
    ``out = input * mask / (1 - p)``; else ``out = input`` (a copy) and an all-True mask.
    Gradient: ``d input = g * mask / (1 - p)`` (composes mul)."""
    if train is False:
        return input.clone(), ones(tuple(input.shape), dtype=bool_)
    keep = 1.0 - float(p)
    if not 0.0 <= keep <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={keep}")
    mask = rand(tuple(input.shape), dtype=float64) < keep
    scale = 1.0 / keep if keep > 0 else 0.0
    return input * (mask.to(input.dtype) * scale), mask


def native_norm(input: Tensor, p=2, dim=None, keepdim: bool = False, dtype=None):
    """torch 2.13 implements ``native_norm`` for sparse tensors only: on a dense tensor it
    raises NotImplementedError, and so does tinyattn (use :func:`tinyattn.norm`)."""
    raise NotImplementedError(
        "Could not run 'aten::native_norm' with arguments from the 'CPU' backend. This could "
        "be because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build). (torch implements it for "
        "sparse tensors only; use torch.norm / torch.linalg.vector_norm)"
    )


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm over every dim but ``dim``, kept as size-1 dims (weight norm's
    ``g``); ``dim = -1``: the norm of all elements (0-d). Composes: norm."""
    if not isinstance(pow, int) or isinstance(pow, bool):
        raise TypeError(
            f"norm_except_dim(): argument 'pow' (position 2) must be int, not {type_name(pow)}"
        )
    if dim == -1:
        return v.norm(pow)
    others = tuple(d for d in range(v.ndim) if d != dim % v.ndim)
    return v.norm(pow, others, keepdim=True)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """See :func:`tinyattn.nn.functional.native_channel_shuffle`. Composes: channel_shuffle."""
    return F.native_channel_shuffle(input, groups)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """In place: each row ``input[i]`` for i in ``indices`` whose ``norm_type``-norm
    exceeds ``max_norm`` is scaled by ``max_norm / (norm + 1e-7)`` (``embedding``'s
    ``max_norm``). Not differentiable: refused when ``input`` requires grad (as torch)."""
    if input.requires_grad and is_grad_enabled():
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
            if input.is_leaf
            else "embedding_renorm_: the derivative is not implemented (call it under no_grad)"
        )
    rows = np.unique(np.asarray(indices._data, dtype=np.int64).reshape(-1))
    if rows.size and (rows.min() < -input.shape[0] or rows.max() >= input.shape[0]):
        raise IndexError(f"embedding_renorm_: index out of range for {input.shape[0]} rows")
    return F.embedding_renorm_(input, rows % input.shape[0], max_norm, norm_type)


# -- functional RNN cells -------------------------------------------------------------------------
def _check_cell(op: str, input, hx, w_ih, w_hh, gates: int) -> None:
    if input.ndim != 2 or hx.ndim != 2:
        raise RuntimeError(
            f"{op}: expected a 2-D input (batch, input_size) and hx (batch, hidden_size), got "
            f"input {list(input.shape)} and hx {list(hx.shape)} (torch: Dimension out of range)"
        )
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(
            f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}"
        )
    if input.shape[0] != hx.shape[0]:
        raise RuntimeError(
            f"Input batch size {input.shape[0]} doesn't match hidden0 batch size {hx.shape[0]}"
        )
    hidden = w_hh.shape[1]
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != gates * hidden:
            raise RuntimeError(
                f"{name} first dim must be {gates} * hidden_size = {gates * hidden}, but got "
                f"{w.shape[0]}"
            )
    if hx.shape[1] != hidden:
        raise RuntimeError(f"hx has inconsistent hidden_size: got {hx.shape[1]} expected {hidden}")


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    """(x W_ih^T + b_ih, h W_hh^T + b_hh)."""
    linear = F.linear
    return linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """``(h', c')`` of one LSTM step, hx = (h, c) each (B, H), weights (4H, in) and (4H, H):
    i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh;
    c' = sigmoid(f) c + sigmoid(i) tanh(g),  h' = sigmoid(o) tanh(c').
    Composes: linear, chunk, sigmoid, tanh, mul, add."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    h, c = hx
    _check_cell("lstm_cell", input, h, w_ih, w_hh, 4)
    if tuple(c.shape) != tuple(h.shape):
        raise RuntimeError(
            f"lstm_cell: the cell state cx {list(c.shape)} must have the shape of hx "
            f"{list(h.shape)}"
        )
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, 1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """h' of one GRU step, hx (B, H), weights (3H, in) and (3H, H): with (r, z, n) the
    chunks of gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh:
    r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r gh_n),
    h' = (1 - z) n + z h. Composes: linear, chunk, sigmoid, tanh, mul, add."""
    _check_cell("gru_cell", input, hx, w_ih, w_hh, 3)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    ir, iz, in_ = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), weights (H, in), (H, H).
    Composes: linear, tanh."""
    _check_cell("rnn_tanh_cell", input, hx, w_ih, w_hh, 1)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh), weights (H, in), (H, H).
    Composes: linear, relu."""
    _check_cell("rnn_relu_cell", input, hx, w_ih, w_hh, 1)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()
