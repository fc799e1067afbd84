"""``tinyattn.nn.utils.rnn``: ``pad_sequence`` (packed sequences are not implemented).

>>> import tinyattn as torch
>>> from tinyattn.nn.utils.rnn import pad_sequence
>>> pad_sequence([torch.ones(3), torch.ones(1)], batch_first=True).tolist()
[[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
"""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops.rearrange import cat, stack

__all__ = ["pad_sequence"]


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
            f"{type(sequences).__name__}"
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
                f"pad_sequence(): argument 'sequences' must hold tensors, got "
                f"{type(s).__name__} at {i}"
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
