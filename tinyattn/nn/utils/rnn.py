"""``tinyattn.nn.utils.rnn``: padding and packing batches of variable-length sequences.

A *packed* batch stores only the real steps of each sequence, time-major: the rows of
step 0 of every sequence, then the rows of step 1 of every sequence still running, ...
with the sequences ordered by decreasing length, so the ones still running at step
``t`` are always the first ``batch_sizes[t]``. ``nn.RNN``/``GRU``/``LSTM`` accept it and
never compute on padding; their final states are those of each sequence's last real step.

>>> import tinyattn as torch
>>> from tinyattn.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence
>>> pad_sequence([torch.ones(3), torch.ones(1)], batch_first=True).tolist()
[[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
>>> x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]])  # (B=2, T=3), lengths 3 and 2
>>> packed = pack_padded_sequence(x, [3, 2], batch_first=True)
>>> packed.data.tolist(), packed.batch_sizes.tolist()
([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
>>> padded.tolist(), lengths.tolist()
([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]], [3, 2])
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...core._dtype import float32, float64
from ...foundations.type_names import type_name
from ...ops.creation.factories import tensor as _as_tensor
from ...ops.shape.rearrange import cat, stack
from ...tensor_api.tensor import Tensor

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def pad_sequence(
    sequences,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of different lengths, padding each to the longest with ``padding_value``.

    Parameters
    ----------
    sequences : list of Tensor, each of shape (L_i, *) with the same trailing dims ``*``
        (a tensor is taken as the list of its slices along dim 0).
    batch_first : bool
        Output (B, L, *) if True, else (L, B, *), with ``L = max L_i`` and ``B = len(sequences)``.
    padding_value : float
        The value of the padding positions.
    padding_side : {"right", "left"}
        Where the padding goes in each sequence.

    Each output slice is ``cat`` of the sequence and a constant block, so the gradient of
    ``sequences[i]`` is the matching slice of the output gradient (padding gets none).
    """
    if isinstance(sequences, Tensor):
        sequences = list(sequences)
    if not isinstance(sequences, (list, tuple)):
        raise TypeError(
            f"pad_sequence(): argument 'sequences' must be a list of tensors, got "
            f"{type_name(sequences)}"
        )
    if not sequences:
        raise RuntimeError("pad_sequence(): received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"pad_sequence(): expected padding_side to be one of left or right, "
            f"but got {padding_side}."
        )
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(
                f"pad_sequence(): argument 'sequences' must hold tensors, got {type_name(s)} at {i}"
            )
        if s.ndim == 0:
            raise RuntimeError(f"pad_sequence(): sequence {i} is a 0-d tensor; expected (L, *)")
        if tuple(s.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise RuntimeError(
                f"pad_sequence(): every sequence must have the same trailing dims; sequence 0 "
                f"has shape {list(sequences[0].shape)} and sequence {i} has {list(s.shape)}"
            )
    length = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = length - s.shape[0]
        if missing:
            block = s.new_full((missing, *s.shape[1:]), padding_value)
            s = cat([s, block] if padding_side == "right" else [block, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


class PackedSequence(
    namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
):
    """A batch of variable-length sequences stored without padding (see the module docstring).

    Fields (a named tuple, as torch's):

    * ``data`` ``(sum(lengths), *)``: the real steps, time-major, longest sequence first;
    * ``batch_sizes`` ``(max(lengths),)`` int64: how many sequences run at each step;
    * ``sorted_indices`` ``(B,)`` int64 or None: ``sorted_indices[j]`` is the batch position
      of the ``j``-th longest sequence (None when the batch came sorted);
    * ``unsorted_indices``: its inverse permutation (or None).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`, not directly.
    """

    __slots__ = ()

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same packing with ``data.to(*args, **kwargs)`` (indices stay int64)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    @property
    def is_cuda(self) -> bool:
        return False


def _lengths_array(
    lengths, batch: int, steps: int, name: str = "pack_padded_sequence()", least: int = 1
) -> np.ndarray:
    """``lengths`` as a 1-D int64 array, checked against the batch and time sizes
    (each length at least ``least``)."""
    values = lengths.detach().numpy() if isinstance(lengths, Tensor) else np.asarray(lengths)
    if values.ndim != 1 or values.dtype.kind not in "iuf" or values.size == 0:
        raise RuntimeError(
            f"{name}: 'lengths' must be a non-empty 1-D list or tensor of ints, got "
            f"{values.ndim}-D {values.dtype} with shape {tuple(values.shape)}"
        )
    if values.dtype.kind == "f" and not np.all(values == np.round(values)):
        raise RuntimeError(f"{name}: 'lengths' must hold whole numbers, got {values.tolist()}")
    values = values.astype(np.int64)
    if values.size != batch:
        raise RuntimeError(
            f"{name}: Expected `len(lengths)` to be equal to batch_size, but got "
            f"{values.size} (batch_size={batch})"
        )
    if values.min() < least:
        bound = "greater than 0" if least == 1 else f"at least {least}"
        raise RuntimeError(
            f"{name}: Length of all samples has to be {bound}, but found an element "
            f"in 'lengths' that is smaller (lengths={values.tolist()})"
        )
    if values.max() > steps:
        raise RuntimeError(
            f"{name}: a length exceeds the padded input: expected every length <= {steps} "
            f"(the time dimension of input), got max(lengths) = {values.max()}"
        )
    return values


def pack_padded_sequence(
    input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch: keep the first ``lengths[b]`` steps of each sequence ``b``.

    Parameters
    ----------
    input : Tensor (T, B, *), or (B, T, *) when ``batch_first``
        Padded sequences.
    lengths : list of int or 1-D int tensor of size B
        Each sequence's length, ``1 <= lengths[b] <= T``.
    enforce_sorted : bool
        If True, ``lengths`` must be non-increasing (``sorted_indices`` is then None); if
        False the batch is sorted by decreasing length here (stable: ties keep their order).

    ``data`` is one row gather of ``input`` (``data[k] = input[t_k, b_k]``), so its gradient
    scatters back into ``input``: ``dinput[t_k, b_k] = ddata[k]``, 0 on padding.
    """
    if not isinstance(input, Tensor):
        raise TypeError(
            f"pack_padded_sequence(): argument 'input' must be a Tensor, got {type_name(input)}"
        )
    if input.ndim < 2:
        raise ValueError(
            f"pack_padded_sequence(): expected input of shape (T, B, *) or (B, T, *), got "
            f"shape {tuple(input.shape)}"
        )
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    lengths = _lengths_array(lengths, batch, steps)
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(
                "pack_padded_sequence(): `lengths` array must be sorted in decreasing order "
                "when `enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                "pack_padded_sequence and/or pack_sequence to sidestep this requirement; got "
                f"lengths={lengths.tolist()}"
            )
        order, sorted_indices, unsorted_indices = np.arange(batch), None, None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = _as_tensor(order.astype(np.int64))
        unsorted_indices = _as_tensor(np.argsort(order).astype(np.int64))
    sorted_lengths = lengths[order]
    batch_sizes = (sorted_lengths[None, :] > np.arange(sorted_lengths[0])[:, None]).sum(1)
    rows = np.concatenate([t * batch + order[:n] for t, n in enumerate(batch_sizes)])
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = flat[_as_tensor(rows.astype(np.int64))]
    return PackedSequence(
        data, _as_tensor(batch_sizes.astype(np.int64)), sorted_indices, unsorted_indices
    )


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: ``(padded, lengths)`` in the original batch order.

    ``padded`` is (T, B, *) (or (B, T, *) with ``batch_first``), ``T = max(lengths)`` or
    ``total_length``; positions past a sequence's length hold ``padding_value``.
    ``lengths`` is an int64 tensor (B,).

    ``padded`` is one row gather of ``cat([data, padding row])``, so the gradient of
    ``data[k]`` is the gradient of the one padded position it went to.
    """
    if not isinstance(sequence, PackedSequence):
        raise TypeError(
            f"pad_packed_sequence(): argument 'sequence' must be a PackedSequence, got "
            f"{type_name(sequence)}"
        )
    data, batch_sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    batch, steps = int(batch_sizes[0]), len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "pad_packed_sequence(): Expected total_length to be at least the length of "
                f"the longest sequence in input, but got total_length={total_length} and max "
                f"sequence length being {steps}"
            )
        steps = int(total_length)
    sorted_lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    order = np.arange(batch)
    if sequence.sorted_indices is not None:
        order = sequence.sorted_indices.numpy().astype(np.int64)
    index = np.full((steps, batch), data.shape[0], dtype=np.int64)  # default: the padding row
    offset = 0
    for t, n in enumerate(batch_sizes):
        index[t, order[:n]] = offset + np.arange(n)
        offset += n
    lengths = np.empty(batch, dtype=np.int64)
    lengths[order] = sorted_lengths
    pad_row = data.new_full((1, *data.shape[1:]), padding_value)
    rows = cat([data, pad_row], 0)[_as_tensor(index.reshape(-1))]
    padded = rows.reshape(steps, batch, *data.shape[1:])
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _as_tensor(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)``: :func:`pad_sequence` then
    :func:`pack_padded_sequence` with ``lengths = [L_i]``.

    Composes: pad_sequence, pack_padded_sequence
    """
    if not isinstance(sequences, (list, tuple)):
        raise TypeError(
            f"pack_sequence(): argument 'sequences' must be a list of tensors, got "
            f"{type_name(sequences)}"
        )
    lengths = [s.shape[0] if isinstance(s, Tensor) and s.ndim else 0 for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """Undo :func:`pad_sequence`: the sequences ``padded[:L_i, i]`` (``padded[i, :L_i]``
    with ``batch_first``), a list of B tensors (L_i, *).

    ``lengths`` is a list or int tensor (B,). Each piece is a view (a slice), so its
    gradient flows back to its own positions only; the padding gets none. (torch's
    version transposes a time-major input in place; this one leaves the input as it is.)

    >>> import tinyattn as torch
    >>> from tinyattn.nn.utils.rnn import unpad_sequence
    >>> x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    >>> [s.tolist() for s in unpad_sequence(x, [3, 1], batch_first=True)]
    [[1.0, 2.0, 3.0], [4.0]]
    """
    if not isinstance(padded_sequences, Tensor) or padded_sequences.ndim < 2:
        got = (
            f"shape {tuple(padded_sequences.shape)}"
            if isinstance(padded_sequences, Tensor)
            else type_name(padded_sequences)
        )
        raise TypeError(
            "unpad_sequence(): argument 'padded_sequences' must be a Tensor of at least 2 "
            f"dims (T, B, *) or (B, T, *), got {got}"
        )
    batched = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    batch, steps = batched.shape[0], batched.shape[1]
    values = _lengths_array(lengths, batch, steps, "unpad_sequence()", least=0)
    return [batched[i, : int(n)] for i, n in enumerate(values)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Undo :func:`pack_sequence`: the list of sequences (L_i, *) in the original order.

    Composes: pad_packed_sequence, unpad_sequence

    >>> import tinyattn as torch
    >>> from tinyattn.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> packed = pack_sequence([torch.tensor([1.0]), torch.tensor([2.0, 3.0])], False)
    >>> [s.tolist() for s in unpack_sequence(packed)]
    [[1.0], [2.0, 3.0]]
    """
    if not isinstance(packed_sequences, PackedSequence):
        raise TypeError(
            "unpack_sequence(): argument 'packed_sequences' must be a PackedSequence, got "
            f"{type_name(packed_sequences)}"
        )
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
