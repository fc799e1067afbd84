"""Scaled dot-product attention: the public function, its one ``Function`` and the dispatch.

The math (per batch and head; ``Q (L, E)``, ``K (S, E)``, ``V (S, Ev)``)::

    S  = Q K^T * scale + mask          scores; a blocked position holds -inf
    P  = softmax(S)                    weights; a row whose keys are all blocked -> 0
    Pd = P * keep / (1 - p)            dropout (keep from kernels.dropout_keep); Pd = P if p = 0
    O  = Pd V

    dV  = Pd^T dO
    dPd = dO V^T
    dP  = dPd * keep / (1 - p)
    dS  = P * (dP - rowsum(dP * P))    softmax backward (tinyattn.kernels.softmax_math)
    dQ  = dS K * scale
    dK  = dS^T Q * scale
    dmask = dS                         (a float mask that requires grad)

The arrays are computed by ``tinyattn.kernels`` (fused kernels or the stored-weights
NumPy path); this module decides which, and adapts shapes and dtypes.

Under ``create_graph=True`` the backward is the stored-weights formula above
(``kernels.reference.attention_backward``, the same code as the NumPy path) run on
Tensors, with ``P`` recomputed as an op of ``Q``, ``K`` and the mask
(``AttentionWeights``): the gradients are themselves differentiable, as in torch's
math path. The fused kernels only ever run a first-order backward.
``multi_head_attention_forward`` (the functional form of ``nn.MultiheadAttention``)
is in ``_mha.py``; the argument checks shared by both are in ``_checks.py``.
"""

from __future__ import annotations

import numpy as np

from ... import kernels
from ...autograd.xp import numpy_xp, tensor_xp
from ...core import _dtype
from ...core.function import Function
from ...kernels import reference, sdp_switches, softmax_math
from ...kernels._boundary import default_scale
from ...ops._util import forward_without_graph, records_no_graph
from ...random import _numpy_generator
from ...tensor_api.tensor import Tensor
from .. import _checks as checks


def causal_keep(L: int, S: int) -> np.ndarray:
    """Upper-left causal pattern ``tril(ones(L, S))``: query i sees keys 0..i (also when L != S)."""
    return np.tril(np.ones((L, S), dtype=bool))


def dropout_seed(dropout_p: float) -> int:
    """The seed of the attention dropout mask, drawn from tinyattn's generator (0 without dropout).

    Every attention path turns it into the same keep mask (``kernels.dropout_keep``),
    so after the same ``manual_seed`` all paths drop the same weights.
    """
    return int(_numpy_generator(None).integers(0, 2**62)) if dropout_p > 0 else 0


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float16 is computed in float32 (and cast back by the caller / the engine)."""
    return _dtype.accumulation_dtype(np.dtype(dtype))


class ScaledDotProductAttention(Function):
    """``O = dropout(softmax(Q K^T * scale + mask)) V`` as one op (formulas: module docstring).

    Inputs ``q (B..., Hq, L, E)``, ``k (B..., Hk, S, E)``, ``v (B..., Hk, S, Ev)``,
    ``mask`` None or additive float ``(..., L, S)`` (broadcastable). Leading dims
    broadcast; with ``groups > 1`` each key/value head serves ``groups`` consecutive
    query heads (GQA), so ``dK``/``dV`` sum over each group. float16 is computed in
    float32 and the output cast back; the engine casts the gradients back.

    Dispatch rule (the one place it is stated; ``_fused_layout`` implements it):

    * **fused** (``kernels.flash_attention_forward/backward``): q, k, v all 3-D
      ``(B, L, E)`` or all 4-D ``(B, H, L, E)`` with equal batch (and, up to GQA,
      head) sizes, a mask (if any) that only broadcasts over those, and a mask that
      does not require grad. The forward keeps ``out`` and each row's ``logsumexp``,
      the backward recomputes the weights tile by tile: no L x S matrix is stored.
      The kernels read strided q, k, v (unit last stride) in place; the output's
      memory follows q's dim order where torch's flash kernel does (``_out_like_q``).
      ``TINYATTN_KERNELS=numpy`` runs the kernels' NumPy twins (the *flash twin*,
      ``kernels.reference``) on this same path.
    * **stored-weights** (``kernels.attention_forward/backward``, NumPy): everything
      else: leading dims that broadcast, more than 4 dims, 2-D inputs, or a float
      mask that requires grad (only this path forms ``dS``, the mask's gradient).
      The L x S weights are kept for the backward.

    ``nn.MultiheadAttention`` uses this op with ``need_weights=False``; with
    ``need_weights=True`` it takes the *returned-weights* path (``AttentionWeights``,
    then dropout and a matmul as separate graph nodes), since the weights are an
    output. All three draw the dropout mask from ``dropout_seed`` and
    ``kernels.dropout_keep``, so for the same seed they drop the same weights.
    Each path's forward saves, through ``ctx.save_for_backward``, the inputs its
    backward reads (the float mask too), so an in-place change of one of them
    between forward and backward raises at backward. Under ``create_graph=True``
    either path's backward runs the stored-weights formula on Tensors, with the
    weights recomputed by ``AttentionWeights``.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, q, k, v, mask, *, causal, scale, dropout_p, groups, seed):
        # the enabled backends (sdpa_kernel) decide between the fused and the math path
        layout = sdp_switches.sdp_path(_fused_layout(q, k, v, mask, groups, ctx.needs_input_grad))
        ctx.fused, ctx.groups = layout, groups
        ctx.options = dict(causal=causal, scale=scale, dropout_p=dropout_p, seed=seed)
        if layout is not None:
            out, ctx.logsumexp = _fused_forward(q, k, v, mask, layout, ctx.options)
            out = out.astype(q.dtype, copy=False)
            ctx.save_for_backward(q, k, v, mask, out)  # version-checked at backward
            return out
        out, ctx.weights = _stored_weights_forward(q, k, v, mask, groups, ctx.options)
        # the backward reads the weights, not the mask (kept only to connect its gradient)
        ctx.save_for_backward(q, k, v, mask if any(ctx.needs_input_grad[3:]) else None)
        return out.astype(q.dtype, copy=False)

    @staticmethod
    def backward(ctx, dout):
        xp = ctx.xp
        q, k, v, mask = ctx.saved_tensors[:4]
        first_order = xp is numpy_xp
        if first_order and ctx.fused is not None:
            out = ctx.saved_tensors[4]
            grads = _fused_backward(dout, q, k, v, mask, out, ctx.logsumexp, ctx.fused, ctx.options)
            return (*grads, None)
        if first_order:
            weights = ctx.weights
        else:  # create_graph: the weights as an op of q, k and the mask, in the graph
            stored = ctx.weights if ctx.fused is None else None
            weights = _weights_op(q, k, mask, ctx.groups, ctx.options, stored)
        dq, dk, dv, dscores = _stored_weights_backward(
            dout, q, k, v, weights, ctx.groups, ctx.options, xp
        )
        return dq, dk, dv, (dscores if ctx.needs_input_grad[3] else None)


# -- the fused path (numba flash kernels, or their NumPy twins) ------------------------------
def _fused_layout(q, k, v, mask, groups, needs_input_grad):
    """ "BLD" or "BHLD": how q, k, v are viewed as the kernels' (B, H, L, D) arrays;
    None: the stored-weights path (see ``ScaledDotProductAttention`` for the rule)."""
    if len(needs_input_grad) > 3 and needs_input_grad[3]:
        return None
    if not (q.ndim == k.ndim == v.ndim and q.ndim in (3, 4)):
        return None
    if not (q.shape[0] == k.shape[0] == v.shape[0]):
        return None
    if q.ndim == 4 and (k.shape[1] != v.shape[1] or q.shape[1] != k.shape[1] * groups):
        return None
    layout = "BLD" if q.ndim == 3 else "BHLD"
    batch_heads = (q.shape[0], 1) if layout == "BLD" else q.shape[:2]
    if mask is not None:
        m = _as_bhld(mask, layout) if mask.ndim == 3 else mask
        if m.ndim > 4:
            return None
        try:
            if np.broadcast_shapes(m.shape[:-2], batch_heads) != batch_heads:
                return None
        except ValueError:
            return None
    return layout


def _as_bhld(x: np.ndarray, layout: str) -> np.ndarray:
    return x[:, None] if layout == "BLD" else x


def _fused_arrays(layout, *arrays):
    """q, k, v (and out, dout) as (B, H, L, D) arrays of the compute dtype."""
    work = _work_dtype(arrays[0].dtype)
    if layout == "BHLD" and all(a.dtype == work for a in arrays):
        return arrays  # (4-D in the compute dtype already: a decode step's case)
    return [_as_bhld(a, layout).astype(work, copy=False) for a in arrays]


def _fused_mask(mask, layout, work):
    if mask is None:
        return None
    return (_as_bhld(mask, layout) if mask.ndim == 3 else mask).astype(work, copy=False)


def _out_like_q(q, k, v, layout, options) -> bool:
    """Whether the output's memory follows q's dim order (else it is C-contiguous).

    torch's CPU SDPA does so when it runs its flash kernel: 4-d inputs with unit last
    strides, no dropout, E == Ev, L and S > 0 (e.g. heads split off a fused qkv
    projection give a (B, L, H, Ev) memory, and ``out.transpose(1, 2).view(B, L, -1)``
    works); otherwise its math path returns a contiguous tensor. We follow it, so
    that a ``.view`` fails or succeeds as under torch."""
    return (
        layout == "BHLD"
        and options["dropout_p"] == 0
        and q.shape[-1] == v.shape[-1]
        and q.shape[-2] > 0
        and k.shape[-2] > 0
        and _unit_last_stride(q)
        and _unit_last_stride(k)
        and _unit_last_stride(v)
    )


def _unit_last_stride(a: np.ndarray) -> bool:
    return a.strides[-1] == a.itemsize or a.shape[-1] <= 1


def _fused_forward(q, k, v, mask, layout, options):
    out_like_q = _out_like_q(q, k, v, layout, options)
    q4, k4, v4 = _fused_arrays(layout, q, k, v)
    mask4 = _fused_mask(mask, layout, q4.dtype)
    out4, logsumexp = kernels.flash_attention_forward(
        q4, k4, v4, mask=mask4, out_like_q=out_like_q, **options
    )
    return (out4[:, 0] if layout == "BLD" else out4), logsumexp


def _fused_backward(dout, q, k, v, mask, out, logsumexp, layout, options):
    q4, k4, v4, out4, dout4 = _fused_arrays(layout, q, k, v, out, dout)
    mask4 = _fused_mask(mask, layout, q4.dtype)
    grads = kernels.flash_attention_backward(
        dout4, q4, k4, v4, out4, logsumexp, mask=mask4, **options
    )
    return tuple(g[:, 0] for g in grads) if layout == "BLD" else grads


# -- the stored-weights path (NumPy, any rank, broadcasting, mask gradient) ------------------
def _flatten_batch(q, k, v, mask, groups, xp=numpy_xp):
    """Cast to the compute dtype, repeat k/v heads for GQA, broadcast the leading dims and
    flatten them: (batch..., L, E) -> (prod(batch), 1, L, E). Returns the arrays and batch.

    The flat index of a weight is then the same as on the fused path, so the dropout
    mask (a function of that index) is too. ``xp``: arrays, or Tensors (create_graph)."""
    work = _work_dtype(reference._dtype_of(q))
    q, k, v = (xp.astype(a, work, copy=False) for a in (q, k, v))
    k, v = reference.repeat_heads(k, groups, xp), reference.repeat_heads(v, groups, xp)
    if mask is not None:
        mask = xp.astype(mask, work, copy=False)
        mask = xp.reshape(mask, (1,) * max(0, 2 - mask.ndim) + tuple(mask.shape))
    lead = [tuple(a.shape)[:-2] for a in (q, k, v) + (() if mask is None else (mask,))]
    batch = np.broadcast_shapes(*lead)

    def flat(a):
        rows_cols = tuple(a.shape)[-2:]
        return xp.reshape(xp.broadcast_to(a, batch + rows_cols), (-1, 1) + rows_cols)

    return flat(q), flat(k), flat(v), (None if mask is None else flat(mask)), batch


def _stored_weights_forward(q, k, v, mask, groups, options):
    q, k, v, mask, batch = _flatten_batch(q, k, v, mask, groups)
    out, weights = kernels.attention_forward(q, k, v, mask=mask, **options)
    return out.reshape(batch + out.shape[-2:]), weights


def _stored_weights_backward(dout, q, k, v, weights, groups, options, xp=numpy_xp):
    qf, kf, vf, _, batch = _flatten_batch(q, k, v, None, groups, xp)
    dout = xp.astype(dout, reference._dtype_of(qf), copy=False)
    dout = xp.reshape(dout, tuple(qf.shape)[:2] + tuple(dout.shape)[-2:])
    options = {key: options[key] for key in ("scale", "dropout_p", "seed")}
    grads = reference.attention_backward(dout, qf, kf, vf, weights, xp=xp, **options)
    dq, dk, dv, dscores = (xp.reshape(g, batch + tuple(g.shape)[-2:]) for g in grads)
    if groups > 1:  # undo the head repeat: each kv head collects its group's gradients
        dk, dv = (
            xp.sum(xp.reshape(g, batch[:-1] + (-1, groups) + tuple(g.shape)[-2:]), axis=-3)
            for g in (dk, dv)
        )
    return dq, dk, dv, dscores


def _weights_op(q, k, mask, groups, options, stored):
    """``P = softmax(Q K^T * scale + mask)`` as an ``AttentionWeights`` op of Tensors
    (create_graph), flattened like the stored-weights path; the causal mask added as -inf.
    ``stored``: P itself when the forward kept it (then the mask's values are not read)."""
    qf, kf, _, maskf, _ = _flatten_batch(q, k, k, mask, groups, tensor_xp)
    if options["causal"] and stored is None:
        L, S = qf.shape[-2], kf.shape[-2]
        causal = np.where(causal_keep(L, S), 0.0, -np.inf).astype(reference._dtype_of(qf))
        maskf = causal if maskf is None else maskf + causal
    return AttentionWeights.apply(qf, kf, maskf, scale=options["scale"], weights=stored)


# -- attention weights, returned (nn.MultiheadAttention with need_weights=True) ------------
class AttentionWeights(Function):
    """``P = softmax(Q K^T * scale + mask)`` over the keys, an op of its own because the
    caller returns it (the returned-weights path of ``nn.MultiheadAttention``).

    ``q (B, H, L, D)``, ``k (B, H, S, D)``, ``mask`` None or additive ``(Bm, Hm, Lm, S)``
    -> ``P (B, H, L, S)``; a row whose keys are all blocked gives weights 0. float16
    is computed in float32 and ``P`` cast back. Backward::

        dS = P * (dP - rowsum(dP * P))      dQ = dS K * scale      dK = dS^T Q * scale
        dmask = dS  (summed over the dims the mask was broadcast along, by the engine)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, q, k, mask, *, scale, weights=None):
        work = _work_dtype(q.dtype)
        if weights is None:  # (given: P already computed by the forward of attention)
            q32, k32 = q.astype(work, copy=False), k.astype(work, copy=False)
            mask = None if mask is None else mask.astype(work, copy=False)
            scores = kernels.attention_scores(q32, k32, scale=scale, mask=mask)
            weights = kernels.softmax_rows(scores)
        weights = weights.astype(q.dtype, copy=False)
        ctx.scale, ctx.work = scale, work
        ctx.save_for_backward(q, k, weights)  # the backward reads no mask
        return weights

    @staticmethod
    def backward(ctx, dweights):
        xp = ctx.xp
        q, k, weights = (xp.astype(a, ctx.work, copy=False) for a in ctx.saved_tensors)
        dweights = xp.astype(dweights, ctx.work, copy=False)
        if xp is numpy_xp:  # first order: the numba row kernel (twin of the formula below)
            dscores = kernels.softmax_rows_backward(dweights, weights)
        else:
            dscores = softmax_math.softmax_backward(dweights, weights, xp=xp)
        dq, dk = reference.attention_scores_backward(dscores, q, k, scale=ctx.scale, xp=xp)
        return dq, dk, (dscores if ctx.needs_input_grad[2] else None)


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """Row-softmaxed attention weights ``(B, H, L, S)`` (fully blocked rows give 0)."""
    return AttentionWeights.apply(q, k, mask, scale=float(scale))


def attention_dropout(weights: Tensor, dropout_p: float) -> Tensor:
    """``weights * keep / (1 - p)`` with the keep mask every attention path uses for this seed."""
    from .basic import DropoutFunction

    scaled_keep = kernels.reference.dropout_scale(
        dropout_seed(dropout_p), tuple(weights.shape), dropout_p, weights._data.dtype
    )
    return DropoutFunction.apply(weights, np.broadcast_to(scaled_keep, tuple(weights.shape)))


# -- the public function ---------------------------------------------------------------------
def _sdpa_mask(attn_mask: Tensor | None, dtype) -> Tensor | np.ndarray | None:
    """bool (True = takes part) -> additive 0 / -inf array; a float mask is passed as is."""
    if attn_mask is None or attn_mask.dtype.name != "bool":
        return attn_mask
    work = _work_dtype(dtype.np_dtype)
    return np.where(attn_mask._data, 0.0, -np.inf).astype(work)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``O = softmax(Q K^T * scale + mask) V``, with torch's signature and semantics.

    ``P = softmax(S)``, ``S = Q K^T * scale + mask``; with dropout, ``O = (P * keep / (1 - p)) V``.
    Gradient, for an upstream ``dO``::

        dV = P^T dO     dP = dO V^T     dS = P * (dP - rowsum(dP * P))
        dQ = dS K * scale     dK = dS^T Q * scale     d(attn_mask) = dS (a float mask)

    Shapes: ``query (..., L, E)``, ``key (..., S, E)``, ``value (..., S, Ev)`` -> ``(..., L, Ev)``;
    leading dims broadcast (e.g. ``(N, H, L, E)``, ``(N, L, E)`` or ``(L, E)``); with
    ``enable_gqa``, ``key``/``value`` may be ``(N, Hk, S, E)`` for ``query (N, Hq, L, E)``,
    ``Hq % Hk == 0``. ``attn_mask (L, S)``, ``(N, 1, L, S)``, ... -> ``d(attn_mask)`` its shape.

    attn_mask : bool (``True`` = the position TAKES PART, the opposite of
        ``nn.MultiheadAttention``) or float (added to ``S``), broadcastable to ``(..., L, S)``.
    dropout_p : dropout on ``P``, always applied (no training flag), as in torch.
    is_causal : upper-left causal mask ``tril(ones(L, S))``; not together with ``attn_mask``.
    scale : defaults to ``1 / sqrt(E)``.
    enable_gqa : query heads (dim -3) may be a multiple of the key/value heads.

    A query row whose keys are all blocked gives 0 (and zero gradients); a NaN in any
    input propagates as in torch's math path (a NaN row is not a blocked row).
    Which kernel runs: see ``ScaledDotProductAttention`` (fused when the shapes allow).
    """
    checks.check_sdpa_args(query, key, value, attn_mask, dropout_p, is_causal, scale)
    groups = checks.gqa_groups(query, key, value, enable_gqa)
    if attn_mask is not None:
        checks.check_sdpa_mask_shape(query, key, value, attn_mask, groups)
    options = dict(
        causal=bool(is_causal),
        scale=default_scale(query._data.shape[-1]) if scale is None else float(scale),
        dropout_p=float(dropout_p),
        groups=groups,
        seed=dropout_seed(dropout_p),
    )
    mask = None if attn_mask is None else _sdpa_mask(attn_mask, query.dtype)
    try:  # (not a `with` around the call: a context manager costs ~2 us on every call)
        if mask is None and records_no_graph(query, key, value):
            q, k, v = query._data, key._data, value._data
            return forward_without_graph(ScaledDotProductAttention, q, k, v, None, **options)
        return ScaledDotProductAttention.apply(query, key, value, mask, **options)
    except ValueError:
        with checks.explain_broadcast_error(query, key, value, attn_mask):
            raise  # NumPy's broadcast error becomes one naming every shape
