"""The basic layer functions of ``nn.functional``: linear, gelu, dropout, embedding, one_hot.

Ops whose backward reads better (or runs faster) fused are ``Function`` classes
here, each with its gradient formula in the docstring.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...autograd.xp import numpy_xp, tensor_xp
from ...core.function import Function
from ...kernels import gelu_layer_norm as kernels
from ...kernels.matmul import linear_threads, rows
from ...ops._util import forward_without_graph, records_no_graph
from ...random import _numpy_generator
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor as _check_tensor

# -- linear ---------------------------------------------------------------------------------


def linear_product(x2: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``x2 @ weight.T`` for ``x2`` (rows, in) and ``weight`` (out, in), as one GEMM.

    ``weight.T`` is a view: BLAS reads the weight as stored, through its transpose flag,
    so no transposed copy is made per call (a tied head, ``F.linear(x, wte.weight)``, is
    one GEMM on the embedding table too).

    Whether BLAS's threads help depends on the machine's load (a decode step's one row is
    bound by reading the weight; on a busy machine each call waits for a thread that is
    not scheduled), so the thread count is chosen per shape by timing both
    (:class:`tinyattn.kernels.matmul.BlasThreadChoice`, where the measurements are).
    """
    return linear_threads.product(x2, weight.T)


class LinearFunction(Function):
    """y = x W^T + b.   x (*, in), W (out, in), b (out,) -> y (*, out).

    dx = g W,   dW = g^T x (summed over the batch dims),   db = sum(g over batch dims)
    """

    node_name = "LinearBackward0"  # (the class is not called Linear: that is the nn Module)

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        # all leading dims folded into rows: one GEMM (a copy if x is a strided view)
        x2 = x.reshape(rows(x), x.shape[-1])
        y = linear_product(x2, weight).reshape(x.shape[:-1] + (weight.shape[0],))
        if bias is not None:
            y += bias  # (y is the product's fresh array: no second output array)
        # x itself, not x2: in-place edits of x are caught, and under create_graph the
        # saved x is the input in the graph (a strided x is folded again in backward)
        ctx.save_for_backward(x, weight)
        ctx.x_shape = x.shape
        return y

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        g2 = xp.reshape(g, (rows(g), weight.shape[0]))
        dx = xp.reshape(g2 @ weight, ctx.x_shape) if need_x else None
        dw = xp.swapaxes(g2, 0, 1) @ xp.reshape(x, (rows(x), weight.shape[1])) if need_w else None
        db = xp.sum(g2, axis=0) if need_b else None
        return dx, dw, db


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Affine map ``y = input @ weight.T + bias``.

    Shapes: ``input`` (*, in), ``weight`` (out, in), ``bias`` (out,) -> ``y`` (*, out).
    A 1-D ``weight`` (in,) gives ``y = input @ weight (+ bias)`` of shape (*).

    Gradient, with ``g = dL/dy`` and the sums over the leading (*) dims::

        d input  = g @ weight                      (*, in)
        d weight = sum g^T input                   (out, in)
        d bias   = sum g                           (out,)

    >>> import tinyattn
    >>> import tinyattn.nn.functional as F
    >>> x = tinyattn.tensor([[1.0, 2.0]], requires_grad=True)
    >>> w = tinyattn.tensor([[1.0, 0.0], [1.0, 1.0]], requires_grad=True)
    >>> F.linear(x, w).sum().backward()
    >>> x.grad, w.grad
    (tensor([[2., 1.]]), tensor([[1., 2.],
            [1., 2.]]))
    """
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)):  # (one test, no call)
        _check_tensor(input, "linear")
        _check_tensor(weight, "linear", "weight")
    if bias is not None:
        _check_tensor(bias, "linear", "bias")
    x, w = input._data, weight._data  # (checks on the arrays: no Size or dtype objects)
    if w.ndim != 2 and w.ndim != 1:
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got shape {list(weight.shape)}")
    if w.ndim == 1:  # torch allows a vector weight: y = x . w (+ b)
        out = input @ weight
        return out + bias if bias is not None else out
    if x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise RuntimeError(
            f"linear: input has last dimension {input.shape[-1] if input.ndim else None} but "
            f"weight has shape {list(weight.shape)} (in_features={weight.shape[1]}; "
            f"input shape {list(input.shape)})"
        )
    if x.dtype != w.dtype or (bias is not None and bias._data.dtype != w.dtype):
        got = f"input {input.dtype}, weight {weight.dtype}" + (
            f", bias {bias.dtype}" if bias is not None else ""
        )
        raise RuntimeError(f"linear: expected input, weight and bias of one dtype, got {got}")
    if bias is not None and bias._data.shape not in ((w.shape[0],), (), (1,)):
        raise RuntimeError(
            f"linear: bias must have shape [{weight.shape[0]}] (out_features), "
            f"got {list(bias.shape)}"
        )
    if records_no_graph(input, weight, bias):
        return forward_without_graph(LinearFunction, x, w, None if bias is None else bias._data)
    return LinearFunction.apply(input, weight, bias)


# -- activations ----------------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


class Gelu(Function):
    """GELU.  exact ('none'):  y = x Phi(x),   dx = g (Phi(x) + x phi(x))
    with Phi the standard normal CDF and phi its density.

    'tanh':  u = sqrt(2/pi) (x + 0.044715 x^3),  t = tanh(u),  y = x (1 + t) / 2,
             dx = g ((1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2)

    First order on float32/float64 runs the numba kernels
    (``tinyattn.kernels.gelu_layer_norm``), whose twin is the formula below (computed in
    float64, rounded once); they save x only and recompute Phi (or t) in the backward.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.approximate = approximate
        if kernels.fits(x):
            ctx.save_for_backward(x, None)  # the kernel's backward recomputes Phi: cheap
            return kernels.gelu(x, approximate)
        x64 = x.astype(np.float64)
        aux = _gelu_aux(numpy_xp, x64, approximate)
        y = 0.5 * x64 * (1.0 + aux) if approximate == "tanh" else x64 * aux
        ctx.save_for_backward(x, aux)  # NumPy's erf is not: computed once
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, aux = ctx.saved_tensors
        if xp is numpy_xp and kernels.fits(x, g):
            return kernels.gelu_backward(g, x, ctx.approximate), None
        x64 = xp.astype(x, np.float64)
        if aux is None or xp is tensor_xp:  # t or Phi (as a function of x under create_graph)
            aux = _gelu_aux(xp, x64, ctx.approximate)
        if ctx.approximate == "tanh":
            t = aux
            du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * x64**2)
            dy = 0.5 * (1.0 + t) + 0.5 * x64 * (1.0 - t * t) * du
        else:
            pdf = xp.exp(-0.5 * x64 * x64) / math.sqrt(2.0 * math.pi)
            dy = aux + x64 * pdf
        return g * xp.astype(dy, g.dtype), None


def _gelu_aux(xp, x64, approximate: str):
    """t = tanh(sqrt(2/pi) (x + 0.044715 x^3)) ('tanh'), or Phi(x) = (1 + erf(x / sqrt 2)) / 2."""
    if approximate == "tanh":
        return xp.tanh(_SQRT_2_OVER_PI * (x64 + _GELU_C * x64**3))
    return 0.5 * (1.0 + xp.erf(x64 / math.sqrt(2.0)))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``y = x Phi(x)`` (or its tanh approximation), any shape.

    ``Phi`` is the standard normal CDF, ``phi`` its density. Gradient:
    ``d input = g (Phi(x) + x phi(x))``; with ``approximate='tanh'``, ``u = sqrt(2/pi)
    (x + 0.044715 x^3)``, ``t = tanh(u)`` and ``d input = g ((1 + t) / 2 + x (1 - t^2) du/dx / 2)``.
    """
    _check_tensor(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if input._data.dtype.kind != "f":  # (the array's dtype: no dtype object per call)
        raise RuntimeError(f"gelu: expected a floating-point input, got {input.dtype}")
    if records_no_graph(input):
        return forward_without_graph(Gelu, input._data, approximate)
    return Gelu.apply(input, approximate)


# -- dropout --------------------------------------------------------------------------------


class DropoutFunction(Function):
    """y = x * m,  m = keep / (1 - p) with keep ~ Bernoulli(1 - p) (inverted dropout).

    dx = g * m
    """

    node_name = "DropoutBackward0"  # (the class is not called Dropout: that is the nn Module)

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, scaled_mask):
        ctx.save_for_backward(scaled_mask)
        return x * scaled_mask

    @staticmethod
    def backward(ctx, g):
        (scaled_mask,) = ctx.saved_tensors
        return g * scaled_mask, None


def _dropout_mask(shape, p: float, dtype: np.dtype) -> np.ndarray:
    keep = _numpy_generator(None).random(shape) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return (keep * scale).astype(dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (training only).

    ``y = x * m`` with ``m = keep / (1 - p)``, ``keep ~ Bernoulli(1 - p)``, same shape as ``x``.
    Gradient: ``d input = g * m`` (the same mask). In eval mode (``training=False``) or with
    ``p=0`` the input is returned unchanged (``d input = g``).
    """
    _check_tensor(input, "dropout")
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mask = _dropout_mask(input.shape, float(p), input._data.dtype)
    if inplace:
        return input._apply_inplace(DropoutFunction, mask)
    return DropoutFunction.apply(input, mask)


# -- embedding ------------------------------------------------------------------------------


class EmbeddingFunction(Function):
    """y = weight[indices]:  weight (V, D), indices (*) -> y (*, D).

    dweight = scatter-add of g rows into the rows named by indices (row padding_idx gets 0);
    with ``scale_grad_by_freq`` each row's sum is divided by how often its index occurs
    """

    node_name = "EmbeddingBackward0"  # (the class is not called Embedding: that is the nn Module)

    supports_create_graph = True

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq=False):
        ctx.flat_indices = indices.reshape(-1)
        ctx.num_weights = weight.shape[0]
        ctx.padding_idx = padding_idx
        ctx.by_freq = scale_grad_by_freq
        return weight[indices]

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        dim = g.shape[-1]
        rows_of_g = xp.reshape(g, (-1, dim))
        dweight = xp.add_at_axis((ctx.num_weights, dim), 0, ctx.flat_indices, rows_of_g)
        if ctx.by_freq:  # (rows no index names stay 0: divide them by 1)
            counts = np.bincount(ctx.flat_indices, minlength=ctx.num_weights)
            dweight = dweight / np.maximum(counts, 1).astype(g.dtype)[:, None]
        if ctx.padding_idx is not None:
            dweight = xp.where(np.arange(ctx.num_weights)[:, None] == ctx.padding_idx, 0, dweight)
        return dweight, None, None, None


def embedding_renorm_(
    weight: Tensor, input: Tensor | np.ndarray, max_norm: float, norm_type: float
) -> Tensor:
    """Scale, in place and without recording, each row of ``weight`` that ``input`` names
    and whose ``norm_type``-norm exceeds ``max_norm``: ``row *= max_norm / (norm + 1e-7)``
    (torch's ``embedding_renorm_``, which ``embedding(max_norm=...)`` runs first)."""
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    rows = np.unique(idx.reshape(-1))
    data = weight._data
    if rows.size:
        picked = data[rows]
        norms = np.linalg.norm(picked, ord=norm_type, axis=1).astype(np.float64)  # (as torch)
        over = norms > max_norm
        if over.any():
            scale = (max_norm / (norms[over] + 1e-7)).astype(data.dtype)
            data[rows[over]] = picked[over] * scale[:, None]
    weight._bump_version()
    return weight


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``: ``y = weight[input]``.

    Shapes: ``input`` (*) integers in ``[0, V)``, ``weight`` (V, D) -> ``y`` (*, D).
    Gradient: ``d weight[v] = sum of g[i] over the positions i with input[i] == v`` (a
    scatter-add of the rows of ``g``); ``d weight[padding_idx] = 0``; no gradient to ``input``.
    ``max_norm``: first rescale, in place, the rows ``input`` reads whose ``norm_type``-norm
    exceeds it (:func:`embedding_renorm_`). ``scale_grad_by_freq``: each row's gradient is
    divided by the number of times its index occurs in ``input`` (as torch; not the derivative).
    """
    _check_tensor(weight, "embedding", "weight")
    if sparse:
        raise NotImplementedError(
            "embedding: sparse=True (a sparse gradient) is not supported by tinyattn: it has "
            "no sparse tensors; leave sparse=False for a dense gradient"
        )
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            f"embedding: expected integer indices (Long or Int) for argument 'input', "
            f"got dtype {idx.dtype}"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: weight must be 2-D, got shape {list(weight.shape)}")
    num = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise IndexError(
            f"embedding: index {int(bad)} is out of range for num_embeddings={num} "
            f"(valid indices are 0..{num - 1}; input shape {list(idx.shape)})"
        )
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx must be within num_embeddings={num}")
        padding_idx = padding_idx % num
    if max_norm is not None:
        embedding_renorm_(weight, idx, max_norm, norm_type)
    return EmbeddingFunction.apply(
        weight, idx.astype(np.int64, copy=False), padding_idx, bool(scale_grad_by_freq)
    )


# -- one_hot, pad ---------------------------------------------------------------------------


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class indices (*) -> int64 one-hot (*, num_classes); ``-1`` infers max + 1."""
    _check_tensor(tensor, "one_hot", "tensor")
    idx = tensor._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of type LongTensor, got {tensor.dtype}"
        )
    if idx.size and idx.min() < 0:
        raise RuntimeError("one_hot: Class values must be non-negative.")
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    elif idx.size and idx.max() >= num_classes:
        raise RuntimeError(
            f"one_hot: Class values must be smaller than num_classes={num_classes}, "
            f"got {int(idx.max())}"
        )
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor._make(out)
