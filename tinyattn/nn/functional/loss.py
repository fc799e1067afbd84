"""Loss functions (``tinyattn.nn.functional.cross_entropy`` and friends) with torch's rules.

``nll_loss``, ``kl_div``'s pointwise term and ``binary_cross_entropy_with_logits``
are ``Function``s; ``cross_entropy`` is ``log_softmax`` + ``nll_loss`` (plus the
label-smoothing and probability-target terms, composed from tensor ops exactly
as torch's ``cross_entropy_loss_*`` do, so the averaging rules match).
"""

from __future__ import annotations

import warnings

import numpy as np

from ...core.function import Function
from ...ops._util import gradient_doc
from ...ops.reduce.softmax import log_softmax
from ...tensor_api.tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str, op: str, allowed=_REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction {allowed}")


def _check_broadcastable(input: Tensor, target: Tensor, op: str) -> None:
    try:
        np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    except ValueError:
        raise ValueError(
            f"{op}: input of shape {list(input.shape)} and target of shape "
            f"{list(target.shape)} are not broadcastable"
        ) from None


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _as_array(x, dtype):
    if x is None:
        return None
    return (x._data if isinstance(x, Tensor) else np.asarray(x)).astype(dtype, copy=False)


# -- nll_loss -------------------------------------------------------------------------------


class NllLoss(Function):
    """Negative log-likelihood of class indices.   logp (N, C, *), target (N, *).

    w_i = weight[target_i] * (target_i != ignore_index),   l_i = -w_i logp[i, target_i]
    'none': l,  'sum': sum(l),  'mean': sum(l) / sum(w)
    dlogp[i, c] = -w_i * g_i' at c = target_i (0 elsewhere), with g' = g (none/sum) or g / sum(w)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, logp, target, weight, ignore_index, reduction):
        squeeze = logp.ndim == 1  # (C,) with a scalar target
        x = logp[None] if squeeze else logp
        t = target[None] if squeeze else target
        valid = t != ignore_index
        safe = np.where(valid, t, 0)
        picked = np.take_along_axis(x, safe[:, None], axis=1)[:, 0]
        w = (weight[safe] if weight is not None else np.ones(safe.shape, x.dtype)) * valid
        w = w.astype(x.dtype, copy=False)
        losses = -w * picked
        ctx.save_for_backward(w)
        ctx.safe, ctx.valid = safe, valid
        ctx.meta = (squeeze, logp.shape, reduction)
        if reduction == "none":
            return losses[0] if squeeze else losses
        total = losses.sum()
        if reduction == "sum":
            return total
        wsum = w.sum()
        ctx.wsum = wsum
        with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: 0/0 = nan, as torch
            return np.asarray(total / wsum, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (w,) = ctx.saved_tensors
        squeeze, shape, reduction = ctx.meta
        w_shape = tuple(w.shape)
        if reduction == "none":
            gl = xp.expand_dims(g, 0) if squeeze else g
        elif reduction == "sum":
            gl = xp.broadcast_to(g, w_shape)
        else:
            with xp.errstate(invalid="ignore", divide="ignore"):
                gl = xp.broadcast_to(g / ctx.wsum, w_shape)
        # Ignored elements get exactly 0 (torch never writes them), also when every
        # element is ignored and 'mean' makes gl = g / 0 = inf: -0 * inf would be nan.
        with xp.errstate(invalid="ignore"):
            picked = xp.where(ctx.valid, -w * gl, 0)
        dx_shape = (w_shape[0], shape[-1] if squeeze else shape[1], *w_shape[1:])
        dx = xp.put_along_axis(dx_shape, ctx.safe[:, None], xp.expand_dims(picked, 1), 1)
        return xp.reshape(dx, shape), None, None, None, None


def _check_class_target(input: Tensor, target, op: str) -> np.ndarray:
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: expected integer class-index target, got dtype {t.dtype}")
    if input.ndim == 1:
        expected = ()
    elif input.ndim >= 2:
        expected = (input.shape[0], *input.shape[2:])
    else:
        raise ValueError(f"{op}: input must have at least 1 dimension, got a 0-d tensor")
    if tuple(t.shape) != expected:
        raise ValueError(
            f"{op}: expected target of shape {list(expected)} for input of shape "
            f"{list(input.shape)} (classes along dim {0 if input.ndim == 1 else 1}), "
            f"got target shape {list(t.shape)}"
        )
    return t.astype(np.int64, copy=False)


def _check_class_range(t: np.ndarray, num_classes: int, ignore_index: int, op: str) -> None:
    bad = (t != ignore_index) & ((t < 0) | (t >= num_classes))
    if bad.any():
        raise IndexError(
            f"{op}: Target {int(t[bad].flat[0])} is out of bounds: expected class indices in "
            f"[0, {num_classes - 1}] for {num_classes} classes (or ignore_index={ignore_index})"
        )


def _check_weight(weight, num_classes: int, op: str):
    if weight is not None and tuple(weight.shape) != (num_classes,):
        raise RuntimeError(
            f"{op}: weight must have shape [{num_classes}] (one per class), "
            f"got {list(weight.shape)}"
        )


@gradient_doc(NllLoss)
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` classes under log-probabilities ``input`` (N, C, *).

    ``weight`` is treated as a constant (no gradient flows to it).
    """
    _check_reduction(reduction, "nll_loss")
    t = _check_class_target(input, target, "nll_loss")
    num_classes = input.shape[0 if input.ndim == 1 else 1]
    _check_weight(weight, num_classes, "nll_loss")
    _check_class_range(t, num_classes, ignore_index, "nll_loss")
    w = _as_array(weight, input._data.dtype)
    return NllLoss.apply(input, t, w, int(ignore_index), reduction)


# -- cross_entropy --------------------------------------------------------------------------


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, *) or (C,) with class indices or class probabilities.

    Class-index targets: ``(1 - s) * nll + s / C * smooth`` where ``smooth`` is
    ``-sum_c weight_c logp_c``, reduced like ``nll`` (torch's rule: 'mean' divides
    by the summed target weights of the non-ignored elements).
    Probability targets (``target`` floating, shaped like ``input``): ``-sum_c w_c t_c logp_c``,
    'mean' divides by the number of elements ``N * d1 * ...`` regardless of weight.

    Gradient (class-index targets, no weight or smoothing, reduction 'sum')::

        d input = g * (softmax(input) - onehot(target))   (0 on ignored rows)

    with weights each row is scaled by ``weight[target]``, and 'mean' divides by their sum.
    """
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if input.ndim == 0:
        raise ValueError("cross_entropy: input must have at least 1 dimension, got a 0-d tensor")
    class_dim = 0 if input.ndim == 1 else 1
    num_classes = input.shape[class_dim]
    _check_weight(weight, num_classes, "cross_entropy")
    logp = log_softmax(input, class_dim)
    w_shape = [1] * input.ndim
    w_shape[class_dim] = num_classes
    if isinstance(target, Tensor) and target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(
                f"cross_entropy: probability target must have the input's shape "
                f"{list(input.shape)}, got {list(target.shape)}"
            )
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(w_shape)
        if reduction == "none":
            return -prod.sum(class_dim)
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum() / (input.numel() / num_classes)

    t = _check_class_target(input, target, "cross_entropy")
    _check_class_range(t, num_classes, ignore_index, "cross_entropy")
    w = _as_array(weight, input._data.dtype)
    nll = NllLoss.apply(logp, t, w, int(ignore_index), reduction)
    if label_smoothing == 0.0:
        return nll
    ignore = Tensor._make(t == ignore_index)
    terms = logp * weight.reshape(w_shape) if weight is not None else logp
    smooth = (-terms.sum(class_dim)).masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            denom = float(w[t[t != ignore_index]].sum())
        else:
            denom = float((t != ignore_index).sum())
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / num_classes)


# -- kl_div ---------------------------------------------------------------------------------


class KlDiv(Function):
    """Pointwise KL term, ``input`` = log q, ``target`` = p (or log p if log_target).

    p given:      l = p (log p - x)   (0 where p = 0)   dx = -g p,     dp = g (log p + 1 - x)
                  (1 computed as p / p, as torch's xlogy does: dp is NaN at p = 0 and p = inf)
    log p given:  l = e^t (t - x)                       dx = -g e^t,   dt = g e^t (t - x + 1)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, target, log_target):
        ctx.log_target = log_target
        ctx.save_for_backward(x, target)
        if log_target:
            return np.exp(target) * (target - x)
        with np.errstate(divide="ignore", invalid="ignore"):
            xlogx = np.where(target == 0, 0.0, target * np.log(target))
        return (xlogx - target * x).astype(np.result_type(x, target), copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, target = ctx.saved_tensors
        if ctx.log_target:
            p = xp.exp(target)
            dt = g * p * (target - x + 1) if ctx.needs_input_grad[1] else None
            return -g * p, dt, None
        with xp.errstate(divide="ignore", invalid="ignore"):
            dt = g * (xp.log(target) + target / target - x) if ctx.needs_input_grad[1] else None
        return -g * target, dt, None


@gradient_doc(KlDiv)
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL divergence ``sum p (log p - input)`` with ``input`` given as log-probabilities.

    'batchmean' divides the sum by ``input.size(0)`` (the true KL per sample); 'mean'
    averages over every element (torch's default, which warns).
    """
    _check_reduction(reduction, "kl_div", (*_REDUCTIONS, "batchmean"))
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
    _check_broadcastable(input, target, "kl_div")
    loss = KlDiv.apply(input, target, bool(log_target))
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


# -- mse_loss -------------------------------------------------------------------------------


def _numeric_target(input: Tensor, target: Tensor) -> Tensor:
    """A bool target as 0/1 in the input's dtype: torch's mse/smooth_l1/huber kernels read
    it so (``input - target`` would refuse a bool operand)."""
    if target.dtype.np_dtype.kind == "b" and input.dtype.is_floating_point:
        return target.to(input.dtype)
    return target


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """Mean squared error ``(input - target)^2``, reduced ('mean' over all elements).

    Gradient: ``d input = 2 g (input - target)`` (times ``weight``; divided by the number of
    elements for 'mean', or by ``sum(weight)`` when weighted),  ``d target = -d input``.
    """
    _check_reduction(reduction, "mse_loss")
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=2,
        )
    _check_broadcastable(input, target, "mse_loss")
    diff = input - _numeric_target(input, target)
    loss = diff * diff
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):  # (torch 2.13's rule)
            raise ValueError(
                f"mse_loss: Weights and input must have the same size: weight "
                f"{list(weight.shape)}, input {list(input.shape)}"
            )
        if reduction == "mean":  # torch 2.13: a weighted mean
            return (loss * weight).sum() / weight.sum()
        loss = loss * weight
    return _reduce(loss, reduction)


# -- binary_cross_entropy_with_logits -------------------------------------------------------


def _log_sigmoid(x, xp=np):
    """``log sigmoid(x) = -(max(-x, 0) + log1p(exp(-|x|)))``, stable for any ``x``."""
    return -(xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x))))


def _bce_terms(x, t, pos_weight, xp=np):
    """``ls = log sigmoid(x)`` (stable for any ``x``) and ``lw = 1 + (pos_weight - 1) t``."""
    ls = _log_sigmoid(x, xp)
    lw = 1 + (pos_weight - 1) * t if pos_weight is not None else 1
    return ls, lw


class BceWithLogits(Function):
    """Binary cross entropy on logits, stable form (torch's):

    ls = log sigmoid(x) = -(max(-x, 0) + log1p(exp(-|x|))),   lw = 1 + (pos_weight - 1) t
    u = (1 - t) x - lw ls,   l = weight * u
    dx = g w ((pos_weight t + 1 - t) sigmoid(x) - pos_weight t),   dt = g w (log sigmoid(-x) - pos_weight ls),
    dweight = g u,   dpos_weight = -g w t ls      (pos_weight = 1 when not given: dt = -g w x)
    These are torch's arrangements of the formulas, so NaN and inf come out where torch's do.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, t, weight, pos_weight):
        ls, lw = _bce_terms(x, t, pos_weight)
        u = (1 - t) * x - lw * ls
        ctx.save_for_backward(x, t, weight, pos_weight)
        out = u * weight if weight is not None else u
        return out.astype(np.result_type(x, t), copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, t, weight, pos_weight = ctx.saved_tensors
        ls, lw = _bce_terms(x, t, pos_weight, xp)
        gw = g * weight if weight is not None else g
        need = ctx.needs_input_grad
        if pos_weight is None:
            dx = gw * (xp.exp(ls) - t) if need[0] else None
        elif need[0]:  # lw again, as torch's backward writes it: pos_weight t + 1 - t
            pt = pos_weight * t
            dx = gw * ((pt + 1 - t) * xp.exp(ls) - pt)
        else:
            dx = None
        if need[1] and pos_weight is not None:
            dt = gw * (_log_sigmoid(-x, xp) - pos_weight * ls)
        else:
            dt = -gw * x if need[1] else None
        dweight = g * ((1 - t) * x - lw * ls) if weight is not None and need[2] else None
        dpos = -gw * t * ls if pos_weight is not None and need[3] else None
        return dx, dt, dweight, dpos


@gradient_doc(BceWithLogits)
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Sigmoid + binary cross entropy in one numerically stable step (``pos_weight`` scales positives)."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy_with_logits: Target size ({list(target.shape)}) must be the "
            f"same as input size ({list(input.shape)})"
        )
    for name, w in (("weight", weight), ("pos_weight", pos_weight)):
        if w is not None:
            try:
                np.broadcast_shapes(tuple(w.shape), tuple(input.shape))
            except ValueError:
                raise ValueError(
                    f"binary_cross_entropy_with_logits: {name} of shape {list(w.shape)} does "
                    f"not broadcast to the input shape {list(input.shape)}"
                ) from None
    loss = BceWithLogits.apply(input, target, weight, pos_weight)
    if target.dtype.is_floating_point and loss.dtype != target.dtype:
        # torch builds the loss in place on ``1 - target``: it keeps the target's dtype
        # (float64 logits with a float32 target give a float32 loss)
        loss = loss.to(target.dtype)
    return _reduce(loss, reduction)
