"""``nn.MultiheadAttention`` with torch's constructor, parameter names, init and forward."""

from __future__ import annotations

from ...foundations.type_names import type_name
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import init
from ..functional.mha import multi_head_attention_forward
from ..parameter import Parameter
from .linear import Linear
from .module import Module


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under torch's name for ``MultiheadAttention.out_proj`` (same parameters)."""


class MultiheadAttention(Module):
    """Multi-head attention ``softmax(Q K^T / sqrt(E/H) + mask) V`` per head, then ``out_proj``.

    Parameters
    ----------
    embed_dim, num_heads : int
        ``E`` and ``H``; ``E`` must be divisible by ``H``.
    dropout : float
        Dropout on the attention weights (training mode only).
    bias : bool
        Biases on the input and output projections.
    add_bias_kv : bool
        Learnable ``bias_k``, ``bias_v`` ``(1, 1, E)`` appended as one more key/value.
    add_zero_attn : bool
        Append a zero key/value column (after splitting heads).
    kdim, vdim : int, optional
        Key/value feature sizes; when they differ from ``E`` the projections are
        ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` instead of ``in_proj_weight``.
    batch_first : bool
        Inputs and output are ``(N, L, E)`` instead of ``(L, N, E)``.

    Masks (``forward``): a bool ``True`` BLOCKS the position (the opposite of
    ``F.scaled_dot_product_attention``); a float mask is added to the scores.
    ``key_padding_mask`` is ``(N, S)``; ``attn_mask`` is ``(L, S)`` or
    ``(N*num_heads, L, S)`` indexed ``batch * num_heads + head``.

    Differences from torch (deliberate):

    * A query whose keys are all blocked gets attention output 0 (so the layer
      returns ``out_proj.bias``), weights 0 and finite gradients. Torch returns
      NaN for such rows when ``need_weights=True``.
    * ``is_causal=True`` without ``attn_mask`` builds the causal mask (torch
      raises); with ``attn_mask`` the mask is used, never silently dropped.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim and num_heads must be > 0, got embed_dim="
                f"{embed_dim} and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self._make_parameters(bias, add_bias_kv, dtype)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _make_parameters(self, bias: bool, add_bias_kv: bool, dtype) -> None:
        """Create the parameters (uninitialised) under torch's names and shapes."""
        E = self.embed_dim

        def param(*shape):
            return Parameter(empty(shape, dtype=dtype))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = param(3 * E, E)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = param(E, E)
            self.k_proj_weight = param(E, self.kdim)
            self.v_proj_weight = param(E, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = param(3 * E)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(E, E, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k, self.bias_v = param(1, 1, E), param(1, 1, E)
        else:
            self.bias_k = self.bias_v = None

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Per head h: ``O_h = softmax(Q_h K_h^T / sqrt(E/H) + mask) V_h``, then ``out_proj``.

        ``Q = query W_q^T + b_q``, ``K = key W_k^T + b_k``, ``V = value W_v^T + b_v``,
        split into H heads of size E/H; ``out = concat_h(O_h) W_o^T + b_o``.
        Gradient of one head, with ``P = softmax(S)``, ``S = Q K^T * scale + mask``::

            dV = P^T dO     dP = dO V^T     dS = P * (dP - rowsum(dP * P))
            dQ = dS K * scale     dK = dS^T Q * scale     (dmask = dS, a float mask)

        then through the projections: ``dW_q = dQ^T query``, ``dquery = dQ W_q`` (and
        likewise for k, v, out_proj); dropout multiplies ``dP`` by the same keep mask.

        Shapes (L target length, S source length, N batch, E embed_dim, H num_heads):

        ============================  ===================  ======================  ==========
        argument                      batch_first=False    batch_first=True        unbatched
        ============================  ===================  ======================  ==========
        query                         (L, N, E)            (N, L, E)               (L, E)
        key / value                   (S, N, kdim/vdim)    (N, S, kdim/vdim)       (S, kdim)
        key_padding_mask              (N, S)               (N, S)                  (S,)
        attn_mask                     (L, S) or (N*H, L, S), row ``batch * H + head``
        attn_output                   (L, N, E)            (N, L, E)               (L, E)
        attn_weights (averaged)       (N, L, S)            (N, L, S)               (L, S)
        attn_weights (not averaged)   (N, H, L, S)         (N, H, L, S)            (H, L, S)
        ============================  ===================  ======================  ==========

        Masks: a bool ``True`` BLOCKS the position; a float mask is added to ``S``.
        ``need_weights=False`` returns None for the weights and runs the fused kernels;
        in training with dropout the returned weights are the post-dropout ones.
        """
        _check_tensors(query, key, value)
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = _seq_first(query, key, value)
        out, weights = self._functional(
            query,
            key,
            value,
            key_padding_mask,
            need_weights,
            attn_mask,
            average_attn_weights,
            is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights

    def _functional(self, query, key, value, *options):
        """``multi_head_attention_forward`` with this module's parameters."""
        kpm, need_weights, attn_mask, average, is_causal = options
        return multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
            self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training,
            key_padding_mask=kpm,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average,
            is_causal=is_causal,
        )  # fmt: skip


def _seq_first(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(N, L, E) -> (L, N, E), transposing a shared input once, so that self-attention
    keeps ``query is key is value`` (then projected with one packed GEMM)."""
    q_t = query.transpose(1, 0)
    k_t = q_t if key is query else key.transpose(1, 0)
    v_t = k_t if value is key else q_t if value is query else value.transpose(1, 0)
    return q_t, k_t, v_t


def _check_tensors(query: object, key: object, value: object) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type_name(t)}")
