"""``nn.RNN``/``GRU``/``LSTM`` over a :class:`~tinyattn.nn.utils.rnn.PackedSequence`.

The packed rows of step ``t`` belong to the ``batch_sizes[t]`` longest sequences, which
are always the first rows of the (sorted) batch. So the recurrence runs on the whole
batch state ``h (B, H)`` and, at step ``t``, updates only its first ``batch_sizes[t]``
rows; the other rows keep their value::

    h_t = cat([step(x_t, h_{t-1}[:n_t]), h_{t-1}[n_t:]])        n_t = batch_sizes[t]

Forward in time, a finished sequence's row is frozen at its last real step, which makes
it its final state. Backward in time (the reverse direction of a bidirectional layer),
a sequence's row stays at ``h_0`` until the walk reaches its last real step, where it
starts. No padding is ever computed on, and the output is packed the same way as the
input: the step outputs, concatenated in time order.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...foundations.type_names import type_name
from ...ops.creation.factories import zeros
from ...tensor_api.tensor import Tensor
from ..utils.rnn import PackedSequence


def _rows(state, n: int):
    """The first ``n`` rows of a state (a tensor or an LSTM ``(h, c)`` pair)."""
    if isinstance(state, tuple):
        return tuple(s[:n] for s in state)
    return state[:n]


def _merge(new, old, n: int):
    """``new`` (first ``n`` rows) on top of the remaining rows of ``old``."""
    if isinstance(new, tuple):
        return tuple(_merge(a, b, n) for a, b in zip(new, old))
    return new if n == old.shape[0] else ops.shape.rearrange.cat([new, old[n:]], 0)


def _run_direction(step, x_gates, batch_sizes, state, w_hh, b_hh, reverse: bool):
    """One direction of one layer over packed gate inputs ``x_gates (sum n_t, G*H)``."""
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)])
    out = [None] * len(batch_sizes)
    steps = range(len(batch_sizes))
    for t in reversed(steps) if reverse else steps:
        n = int(batch_sizes[t])
        y, new = step(x_gates[int(offsets[t]) : int(offsets[t + 1])], _rows(state, n), w_hh, b_hh)
        out[t] = y
        state = _merge(new, state, n)
    return ops.shape.rearrange.cat(out, 0), state


def run_packed(module, data: Tensor, batch_sizes: np.ndarray, states: list):
    """Every layer and direction over packed ``data (sum n_t, in)``; ``states[layer*D + d]``.

    Returns the packed output data ``(sum n_t, D*H)`` and the final state of each
    layer and direction (rows in sorted order). The layer loop is the module's own
    (``RNNBase._run``); only the walk of one direction differs.
    """

    def run_direction(step, x_gates, state, w_hh, b_hh, direction):
        return _run_direction(step, x_gates, batch_sizes, state, w_hh, b_hh, direction)

    return module._run(data, states, run_direction)


def _initial_states(module, packed: PackedSequence, hx, with_cell: bool, batch: int) -> list:
    """Per layer and direction, the initial state in the packed (sorted) batch order."""
    name = type(module).__name__
    shape = (module.num_layers * (2 if module.bidirectional else 1), batch, module.hidden_size)
    if hx is None:
        h0 = zeros(shape, dtype=packed.data.dtype)
        hx = (h0, h0) if with_cell else h0
    elif with_cell and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
        raise TypeError(f"{name}: hx must be a tuple (h_0, c_0), got {type_name(hx)}")
    module.check_forward_args(packed.data, hx, packed.batch_sizes)
    hx = module.permute_hidden(hx, packed.sorted_indices)  # the caller's order -> packed order
    if with_cell:
        return [(hx[0][i], hx[1][i]) for i in range(shape[0])]
    return [hx[i] for i in range(shape[0])]


def forward_packed(module, packed: PackedSequence, hx, with_cell: bool):
    """``module(packed, hx) -> (packed output, h_n | (h_n, c_n))``, states in batch order.

    ``batch_first`` does not apply: a packed batch has no batch or time dimension.
    """
    name = type(module).__name__
    data = packed.data
    if data.ndim != 2:
        raise ValueError(
            f"{name}: expected packed data of shape (sum(lengths), input_size), got shape "
            f"{tuple(data.shape)}"
        )
    if data.shape[-1] != module.input_size:
        raise RuntimeError(
            f"{name}: input.size(-1) must be equal to input_size. Expected "
            f"{module.input_size}, got {data.shape[-1]}"
        )
    batch_sizes = packed.batch_sizes.numpy().astype(np.int64)
    states = _initial_states(module, packed, hx, with_cell, int(batch_sizes[0]))
    output, final = run_packed(module, data, batch_sizes, states)
    if with_cell:
        h_n = ops.shape.rearrange.stack([s[0] for s in final], 0)
        c_n = ops.shape.rearrange.stack([s[1] for s in final], 0)
    else:
        h_n = ops.shape.rearrange.stack(final, 0)
    out = packed._replace(data=output)
    hidden = (h_n, c_n) if with_cell else h_n
    return out, module.permute_hidden(hidden, packed.unsorted_indices)  # the caller's order
