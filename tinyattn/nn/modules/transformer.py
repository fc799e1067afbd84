"""The Transformer of "Attention Is All You Need" with torch's modules, names and signatures.

Encoder layer (post-norm, the default; ``norm_first=True`` is pre-norm)::

    x = norm1(x + dropout1(self_attn(x, x, x)))
    x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))

The decoder layer adds cross-attention to the encoder output (``memory``)
between the two, with ``norm2``/``dropout2``, and the feed-forward block uses
``norm3``/``dropout3``. Masks follow ``nn.MultiheadAttention``: a bool ``True``
BLOCKS the position, a float mask is added to the scores. The ``*_is_causal``
flags are hints: a given mask is always used; with no mask, ``True`` builds the
causal mask (torch raises there). Fully blocked query rows give 0 attention
(not NaN), as in ``MultiheadAttention``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from ._args import int_arg, size_arg
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _get_activation_fn(activation: str | Callable) -> Callable:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")


def _get_clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies (each layer gets its own parameters)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


# Sub-blocks shared by the encoder and decoder layers. The layers' constructors keep
# torch's attribute order: it fixes the parameter order (the state_dict keys, and the
# random draws of Transformer's re-initialisation).


def _attention(d_model, nhead, dropout, bias, batch_first, dtype) -> MultiheadAttention:
    return MultiheadAttention(
        d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype
    )


def _layer_norm(d_model, layer_norm_eps, bias, dtype) -> LayerNorm:
    return LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)


def _attention_block(attn, dropout, x, kv, attn_mask, key_padding_mask, is_causal) -> Tensor:
    """``dropout(attn(x, kv, kv))``: self-attention when ``kv`` is ``x``, else cross-attention."""
    x = attn(
        x,
        kv,
        kv,
        attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        need_weights=False,
        is_causal=bool(is_causal),
    )[0]
    return dropout(x)


def _feed_forward(layer, x: Tensor) -> Tensor:
    """``linear2(dropout(activation(linear1(x))))`` (the output dropout is the caller's)."""
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


def _check_layer_args(layer: str, d_model, dim_feedforward) -> None:
    """Sizes are ints: a float would otherwise surface later inside a sub-layer's message."""
    size_arg(layer, "d_model", d_model)
    size_arg(layer, "dim_feedforward", dim_feedforward)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm.

    Parameters: ``d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu"``
    (``"gelu"`` or a callable), ``layer_norm_eps=1e-5, batch_first=False,
    norm_first=False, bias=True``. Input ``(S, N, E)`` (``(N, S, E)`` batch-first) or ``(S, E)``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_layer_args("TransformerEncoderLayer", d_model, dim_feedforward)
        self.self_attn = _attention(d_model, nhead, dropout, bias, batch_first, dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """One encoder layer on src (S, N, E) ((N, S, E) batch-first, or (S, E)) -> same shape.

        Post-norm: ``x = norm1(x + SA(x))``, ``x = norm2(x + FF(x))``; with ``norm_first``:
        ``x = x + SA(norm1(x))``, ``x = x + FF(norm2(x))``; ``SA`` self-attention then dropout,
        ``FF(x) = dropout(linear2(dropout(act(linear1(x)))))``. Each residual passes ``g`` straight
        through: ``dx = g + J_block^T g``.

        Composes: nn.MultiheadAttention, F.linear, F.layer_norm, F.dropout, F.relu, F.gelu
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False) -> Tensor:
        return _attention_block(
            self.self_attn, self.dropout1, x, x, attn_mask, key_padding_mask, is_causal
        )

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(_feed_forward(self, x))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention to ``memory``, feed-forward; residual + LayerNorm each.

    Same constructor as :class:`TransformerEncoderLayer`; adds ``multihead_attn``,
    ``norm3`` and ``dropout3``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_layer_args("TransformerDecoderLayer", d_model, dim_feedforward)
        self.self_attn = _attention(d_model, nhead, dropout, bias, batch_first, dtype)
        self.multihead_attn = _attention(d_model, nhead, dropout, bias, batch_first, dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm3 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """One decoder layer: tgt (T, N, E) attends to itself and to memory (S, N, E) -> (T, N, E).

        Post-norm: ``x = norm1(x + SA(x))``, ``x = norm2(x + MHA(x, memory))``,
        ``x = norm3(x + FF(x))`` (pre-norm with ``norm_first``). Each residual passes ``g`` straight
        through: ``dx = g + J_block^T g``; ``memory`` gets the cross-attention's key/value
        gradients.

        Composes: nn.MultiheadAttention, F.linear, F.layer_norm, F.dropout, F.relu, F.gelu
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False) -> Tensor:
        return _attention_block(
            self.self_attn, self.dropout1, x, x, attn_mask, key_padding_mask, is_causal
        )

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal: bool = False) -> Tensor:
        return _attention_block(
            self.multihead_attn, self.dropout2, x, mem, attn_mask, key_padding_mask, is_causal
        )

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(_feed_forward(self, x))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given.

    ``enable_nested_tensor`` and ``mask_check`` are accepted for torch compatibility and
    ignored: tinyattn has no nested tensors, so padded positions are computed like the
    rest (torch's eval fast path with nested tensors returns 0 there instead).
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        int_arg("TransformerEncoder", "num_layers", num_layers)
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """The encoder layers in turn, then ``norm``; shapes as :class:`TransformerEncoderLayer`.

        The gradient is the chain rule through the layers, last to first:
        ``d src = J_1^T (... J_n^T (J_norm^T g))``.

        Composes: nn.TransformerEncoderLayer, nn.LayerNorm
        """
        output = src
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        int_arg("TransformerDecoder", "num_layers", num_layers)
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """The decoder layers in turn (each with ``memory``), then ``norm``; shapes as the layer's.

        ``d tgt`` is the chain rule through the layers, last to first; ``d memory`` sums every
        layer's cross-attention gradient.

        Composes: nn.TransformerDecoderLayer, nn.LayerNorm
        """
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder Transformer with torch's constructor, parameter names and forward.

    ``src (S, N, E)``, ``tgt (T, N, E)`` (batch-first ``(N, S, E)``, ``(N, T, E)``) ->
    ``(T, N, E)``. All parameters with more than one dim are re-initialised with
    ``xavier_uniform_``, as torch does.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        layer_kw = dict(batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(*layer_args, **layer_kw)
            encoder_norm = _layer_norm(d_model, layer_norm_eps, bias, dtype)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(*layer_args, **layer_kw)
            decoder_norm = _layer_norm(d_model, layer_norm_eps, bias, dtype)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """``decoder(tgt, encoder(src))``: src (S, N, E), tgt (T, N, E) -> (T, N, E).

        ``d src`` flows through the encoder from the decoder's gradient with respect to
        ``memory``; ``d tgt`` through the decoder.

        Composes: nn.TransformerEncoder, nn.TransformerDecoder
        """
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(
                f"Transformer: the batch number of src and tgt must be equal, got src "
                f"{tuple(src.shape)} and tgt {tuple(tgt.shape)} (batch_first={self.batch_first})"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model="
                f"{self.d_model}, got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """``(sz, sz)`` float mask: 0 on and below the diagonal, ``-inf`` above (future keys)."""
        from ...core import _dtype as dt

        np_dtype = (dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()).np_dtype
        return Tensor._make(np.triu(np.full((sz, sz), -np.inf, dtype=np_dtype), k=1))
