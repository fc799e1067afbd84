"""Recurrent layers (``RNN``, ``LSTM``, ``GRU``) and their cells, composed from tensor ops.

Gate equations (torch's, gate order as in the stacked weights)::

    LSTM (i, f, g, o):  i, f, o = sigmoid(.), g = tanh(.)      each (.) = x W_ih^T + b_ih + h W_hh^T + b_hh
                        c' = f * c + i * g,   h' = o * tanh(c')
    GRU (r, z, n):      r = sigmoid(x_r + h_r),  z = sigmoid(x_z + h_z)
                        n = tanh(x_n + r * h_n),  h' = (1 - z) * n + z * h
    RNN:                h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)   (or relu)

No fused cell: the backward pass is the composition of the ops' backwards, which
is what a learner should see unrolled through time. Parameters are
``weight_ih_l{k}[_reverse]`` ``(G*H, in)``, ``weight_hh_l{k}[_reverse]`` ``(G*H, H)``,
``bias_ih_l{k}``, ``bias_hh_l{k}`` ``(G*H,)``, all ~ U(-1/sqrt(H), 1/sqrt(H)).
"""

from __future__ import annotations

import math
import numbers
import warnings

from ... import ops
from ...core.device import check_device
from ...foundations.type_names import type_name
from ...ops.creation.factories import empty, zeros
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ._args import size_arg
from ._rnn_packed import forward_packed
from .module import Module

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# -- one time step, given the input part of the gates (x W_ih^T + b_ih) precomputed ----------
def _lstm_step(x_gates, state, w_hh, b_hh):
    h, c = state
    i, f, g, o = (x_gates + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = ops.elementwise.unary.sigmoid(f) * c + ops.elementwise.unary.sigmoid(
        i
    ) * ops.elementwise.unary.tanh(g)
    h = ops.elementwise.unary.sigmoid(o) * ops.elementwise.unary.tanh(c)
    return h, (h, c)


def _gru_step(x_gates, h, w_hh, b_hh):
    x_r, x_z, x_n = x_gates.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = ops.elementwise.unary.sigmoid(x_r + h_r)
    z = ops.elementwise.unary.sigmoid(x_z + h_z)
    n = ops.elementwise.unary.tanh(x_n + r * h_n)
    h = (1 - z) * n + z * h
    return h, h


def _rnn_step(nonlinearity):
    act = ops.elementwise.unary.tanh if nonlinearity == "tanh" else ops.elementwise.unary.relu

    def step(x_gates, h, w_hh, b_hh):
        h = act(x_gates + F.linear(h, w_hh, b_hh))
        return h, h

    return step


def _check_rnn_args(name, mode, input_size, hidden_size, num_layers, dropout, proj_size) -> None:
    """torch's RNNBase checks, in torch's order and with its messages (prefixed by the layer)."""
    for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"{name}: {arg} should be of type int, got: {type_name(value)}")
        if value <= 0:
            raise ValueError(f"{name}: {arg} must be greater than zero, got {value}")
    if not isinstance(num_layers, numbers.Integral):
        raise TypeError(f"{name}: num_layers should be of type int, got: {type_name(num_layers)}")
    if num_layers <= 0:
        raise ValueError(f"{name}: num_layers must be greater than zero, got {num_layers}")
    if not isinstance(dropout, numbers.Real) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
        raise ValueError(
            f"{name}: dropout should be a number in range [0, 1] representing the probability "
            f"of an element being zeroed, got {dropout!r}"
        )
    if dropout > 0 and num_layers == 1:
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            "dropout expects num_layers greater than 1, but got "
            f"dropout={dropout} and num_layers={num_layers}",
            stacklevel=4,
        )
    if not isinstance(proj_size, numbers.Integral):
        raise TypeError(f"{name}: proj_size should be of type int, got: {type_name(proj_size)}")
    if proj_size < 0:
        raise ValueError(
            f"{name}: proj_size should be a positive integer or zero to disable projections"
        )
    if proj_size and mode != "LSTM":
        raise ValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN or GRU")
    if proj_size >= hidden_size:
        raise ValueError(f"{name}: proj_size has to be smaller than hidden_size")
    if proj_size:
        raise NotImplementedError(f"{name}: proj_size is not supported by tinyattn")


def _run_padded(step, x_gates: Tensor, state, w_hh, b_hh, reverse: int):
    """One direction over (L, N, 4H or 3H or H) input gates: outputs (L, N, H), last state."""
    steps = range(x_gates.shape[0])
    out: list = [None] * len(steps)
    for t in reversed(steps) if reverse else steps:
        out[t], state = step(x_gates[t], state, w_hh, b_hh)
    return ops.shape.rearrange.stack(out, 0), state


class RNNBase(Module):
    """Shared by RNN, LSTM and GRU: parameters, layouts, layers, directions, dropout."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        _check_rnn_args(name, mode, input_size, hidden_size, num_layers, dropout, proj_size)
        input_size, hidden_size, num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {
                    "weight_ih": (gate_size, layer_input),
                    "weight_hh": (gate_size, hidden_size),
                }
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, Parameter(empty(shape, dtype=dtype)))
                    self._flat_weights_names.append(kind + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """torch's call to pack the weights into one cuDNN buffer; on the CPU (torch's too)
        there is nothing to pack, so it does nothing. Programs call it after loading."""

    def _weights(self, layer: int, direction: int):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda kind: getattr(self, kind + suffix, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _step(self):
        if self.mode == "LSTM":
            return _lstm_step
        if self.mode == "GRU":
            return _gru_step
        return _rnn_step("tanh" if self.mode == "RNN_TANH" else "relu")

    def _check_input(self, input: Tensor) -> bool:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type_name(input)}")
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{name}: expected input to be 2-D (L, input_size) or 3-D, got shape "
                f"{tuple(input.shape)}"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{name}: input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )
        return input.ndim == 3

    # -- torch's checking steps: forward calls them, subclasses override them ----------
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """3-D input (2-D packed data when ``batch_sizes`` is given) of ``input_size``."""
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def get_expected_hidden_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, hidden_size)`` for this input."""
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)

    def check_hidden_size(
        self, hx: Tensor, expected_hidden_size, msg: str = "Expected hidden size {}, got {}"
    ) -> None:
        """``RuntimeError(msg.format(expected, got))`` unless ``hx`` has the expected shape."""
        if not isinstance(hx, Tensor):
            raise TypeError(f"{type(self).__name__}: hx must be a Tensor, got {type_name(hx)}")
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), tuple(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None) -> None:
        """The input and the initial hidden state, as ``forward`` receives them."""
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        msg = f"{type(self).__name__}: expected hidden size {{}}, got {{}}"
        self.check_hidden_size(hidden, expected, msg)

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        """``hx`` with its batch (dim 1) reordered by ``permutation`` (None: as is)."""
        return hx if permutation is None else hx.index_select(1, permutation)

    def _run(self, input: Tensor, states: list, run_direction=None) -> tuple[Tensor, list]:
        """Run every layer and direction over ``input``; ``states[layer*D + d]``.

        ``input`` is (L, N, in), walked by ``_run_padded``; packed batches pass their
        packed rows and a ``run_direction`` of the same signature (``_rnn_packed``).
        """
        run_direction = run_direction or _run_padded
        step = self._step()
        directions = 2 if self.bidirectional else 1
        final = []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
                x_gates = F.linear(layer_input, w_ih, b_ih)  # all time steps at once
                state = states[layer * directions + direction]
                y, state = run_direction(step, x_gates, state, w_hh, b_hh, direction)
                outputs.append(y)
                final.append(state)
            layer_input = outputs[0] if directions == 1 else ops.shape.rearrange.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, p=self.dropout, training=True)
        return layer_input, final

    def _forward(self, input: Tensor, hx, with_cell: bool):
        if isinstance(input, PackedSequence):
            return forward_packed(self, input, hx, with_cell)
        batched = self._check_input(input)
        if with_cell and hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{type(self).__name__}: hx must be a tuple (h_0, c_0)")
        if not batched:  # as torch: one sequence becomes a batch of one
            input = input.unsqueeze(0 if self.batch_first else 1)
            if hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx) if with_cell else hx.unsqueeze(1)
        shape = self.get_expected_hidden_size(input, None)
        if hx is None:
            h0 = zeros(shape, dtype=input.dtype)
            hx = (h0, h0) if with_cell else h0
        self.check_forward_args(input, hx, None)
        hx = self.permute_hidden(hx, None)
        if self.batch_first:
            input = input.transpose(0, 1)
        if with_cell:
            states = [(hx[0][i], hx[1][i]) for i in range(shape[0])]
        else:
            states = [hx[i] for i in range(shape[0])]
        output, final = self._run(input, states)
        if with_cell:
            h_n = ops.shape.rearrange.stack([s[0] for s in final], 0)
            c_n = ops.shape.rearrange.stack([s[1] for s in final], 0)
        else:
            h_n = ops.shape.rearrange.stack(final, 0)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if with_cell else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, self.permute_hidden((h_n, c_n) if with_cell else h_n, None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class LSTM(RNNBase):
    """Multi-layer LSTM. ``forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``.

    ``input (L, N, input_size)`` (``(N, L, ...)`` batch-first, or unbatched ``(L, input_size)``);
    ``output (L, N, D*H)``; ``h_n, c_n (num_layers*D, N, H)``, D = 2 if bidirectional.
    A ``PackedSequence`` input gives a packed output and each sequence's last-step states
    (``_rnn_packed.py``); RNN and GRU accept one too.
    """

    def __init__(self, input_size: int, hidden_size: int, *args, **kwargs) -> None:
        super().__init__("LSTM", input_size, hidden_size, *args, **kwargs)

    def get_expected_cell_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        """The shape of ``c_0``: ``(num_layers * num_directions, batch, hidden_size)``."""
        return RNNBase.get_expected_hidden_size(self, input, batch_sizes)

    def check_forward_args(  # type: ignore[override]
        self, input: Tensor, hidden: tuple[Tensor, Tensor], batch_sizes: Tensor | None
    ) -> None:
        """The input and ``(h_0, c_0)``, as ``forward`` receives them."""
        name = type(self).__name__
        self.check_input(input, batch_sizes)
        expected_h = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden[0], expected_h, f"{name}: expected h_0 size {{}}, got {{}}")
        expected_c = self.get_expected_cell_size(input, batch_sizes)
        self.check_hidden_size(hidden[1], expected_c, f"{name}: expected c_0 size {{}}, got {{}}")

    def permute_hidden(  # type: ignore[override]
        self, hx: tuple[Tensor, Tensor], permutation: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """``(h, c)`` with their batch (dim 1) reordered by ``permutation``."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None):
        """Run the LSTM over the sequence; shapes in the class docstring.

        Each step: ``i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh``,
        ``c' = s(f) c + s(i) tanh(g)``, ``h' = s(o) tanh(c')`` (``s`` the sigmoid); the gradient is
        backpropagation through time over these ops (inter-layer dropout in training).

        Composes: F.linear, tinyattn.sigmoid, tinyattn.tanh, tinyattn.relu, Tensor.chunk,
        tinyattn.stack, tinyattn.cat, F.dropout
        """
        return self._forward(input, hx, with_cell=True)


class GRU(RNNBase):
    """Multi-layer GRU. ``forward(input, h_0=None) -> (output, h_n)``; shapes as :class:`LSTM`."""

    def __init__(self, input_size: int, hidden_size: int, *args, **kwargs) -> None:
        super().__init__("GRU", input_size, hidden_size, *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None):
        """Run the GRU over the sequence; shapes in the class docstring.

        Each step: ``r = s(x_r + h_r)``, ``z = s(x_z + h_z)``, ``n = tanh(x_n + r h_n)``,
        ``h' = (1 - z) n + z h``, with ``x_* = x W_i*^T + b_i*``, ``h_* = h W_h*^T + b_h*``; the
        gradient is backpropagation through time over these ops.

        Composes: F.linear, tinyattn.sigmoid, tinyattn.tanh, tinyattn.relu, Tensor.chunk,
        tinyattn.stack, tinyattn.cat, F.dropout
        """
        return self._forward(input, hx, with_cell=False)


class RNN(RNNBase):
    """Elman RNN with ``nonlinearity`` ``"tanh"`` (default) or ``"relu"``; shapes as :class:`GRU`."""

    def __init__(
        self, input_size: int, hidden_size: int, *args, nonlinearity: str = "tanh", **kwargs
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; use 'tanh' or 'relu'")
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None):
        """Run the Elman RNN over the sequence; shapes in the class docstring.

        Each step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, act tanh or relu; the gradient
        is backpropagation through time over these ops.

        Composes: F.linear, tinyattn.sigmoid, tinyattn.tanh, tinyattn.relu, Tensor.chunk,
        tinyattn.stack, tinyattn.cat, F.dropout
        """
        return self._forward(input, hx, with_cell=False)


# -- cells: one time step, parameters without the layer suffix -------------------------------
class RNNCellBase(Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        check_device(device)
        name = type(self).__name__
        input_size = size_arg(name, "input_size", input_size)
        hidden_size = size_arg(name, "hidden_size", hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), dtype=dtype))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input: Tensor, hx, n_states: int):
        name = type(self).__name__
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"{name}: expected input (N, {self.input_size}) or ({self.input_size},), got "
                f"shape {tuple(input.shape)}"
            )
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            h0 = zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
            hx = (h0,) * n_states
        else:
            hx = tuple(hx) if n_states == 2 else (hx,)
            expected = (input.shape[0], self.hidden_size) if batched else (self.hidden_size,)
            for i, h in enumerate(hx):
                if tuple(h.shape) != expected:
                    arg = f"hx[{i}]" if n_states == 2 else "hx"
                    raise ValueError(
                        f"{name}: expected hidden state {arg} of shape {expected}, "
                        f"got {tuple(h.shape)}"
                    )
            if not batched:
                hx = tuple(h.unsqueeze(0) for h in hx)
        x_gates = F.linear(input, self.weight_ih, self.bias_ih)
        return batched, x_gates, hx

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input (N, in), (h, c)=None) -> (h', c')``, each ``(N, H)``."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None):
        """One LSTM step: input (N, input_size) or (input_size,), ``hx = (h, c)`` (N, H) each
        -> ``(h', c')``.

        ``c' = s(f) c + s(i) tanh(g)``, ``h' = s(o) tanh(c')``; e.g. ``dc = g_c s(f)`` through the
        cell path, the rest by the chain rule through these ops.

        Composes: F.linear, Tensor.chunk, tinyattn.sigmoid, tinyattn.tanh
        """
        batched, x_gates, state = self._prepare(input, hx, 2)
        _, (h, c) = _lstm_step(x_gates, state, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input (N, in), h=None) -> h'`` ``(N, H)``."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One GRU step: input (N, input_size) or (input_size,), h (N, H) -> h' (N, H).

        ``h' = (1 - z) n + z h`` (see :meth:`GRU.forward`); ``dh`` gets ``g z`` directly plus the
        paths through r, z and n.

        Composes: F.linear, Tensor.chunk, tinyattn.sigmoid, tinyattn.tanh
        """
        batched, x_gates, (h,) = self._prepare(input, hx, 1)
        h, _ = _gru_step(x_gates, h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class RNNCell(RNNCellBase):
    """One Elman step ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNNCell: unknown nonlinearity {nonlinearity!r}; use 'tanh' or 'relu'"
            )
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One Elman step: input (N, input_size) or (input_size,), h (N, H) -> h' (N, H).

        ``h' = act(a)``, ``a = x W_ih^T + b_ih + h W_hh^T + b_hh``: ``da = g act'(a)``,
        ``dx = da W_ih``, ``dh = da W_hh``, ``dW_ih = da^T x``, ``dW_hh = da^T h``, ``db = sum da``.
        """
        batched, x_gates, (h,) = self._prepare(input, hx, 1)
        h, _ = _rnn_step(self.nonlinearity)(x_gates, h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
