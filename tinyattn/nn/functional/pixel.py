"""``pixel_shuffle``, ``pixel_unshuffle`` and ``channel_shuffle``: pure rearrangements.

Each is a reshape, a permutation and a reshape, so each gradient is the inverse
rearrangement of ``g`` (``pixel_unshuffle`` for ``pixel_shuffle`` and back;
``channel_shuffle`` with C / groups groups for ``channel_shuffle`` with ``groups``).
"""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]


def _check(input, factor, name: str, op: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: argument 'input' must be a Tensor, got {type_name(input)}")
    if input.ndim < 3:
        raise RuntimeError(
            f"{op}: expected an input of at least 3 dims (*, C, H, W), got shape "
            f"{list(input.shape)}"
        )
    if not isinstance(factor, numbers.Integral) or isinstance(factor, bool) or factor < 1:
        raise RuntimeError(f"{op}: {name} must be a positive int, got {factor!r}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): ``y[c, h r + i, w r + j] = x[c r^2 + i r + j, h, w]``.

    Gradient: ``dx = pixel_unshuffle(g, r)``.
    """
    r = upscale_factor
    _check(input, r, "upscale_factor", "pixel_shuffle")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle: expected the channel dim (size(-3)) to be divisible by "
            f"upscale_factor^2 = {r * r}, got input of shape {list(input.shape)}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of :func:`pixel_shuffle`.

    Gradient: ``dx = pixel_shuffle(g, r)``.
    """
    r = downscale_factor
    _check(input, r, "downscale_factor", "pixel_unshuffle")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(
            f"pixel_unshuffle: expected height and width (size(-2), size(-1)) to be divisible "
            f"by downscale_factor={r}, got input of shape {list(input.shape)}"
        )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H/r, W/r)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) -> (N, C, *): channel ``g * (C / groups) + k`` moves to ``k * groups + g``
    (ShuffleNet's shuffle: view as (groups, C / groups), transpose, flatten).

    Gradient: ``dx = channel_shuffle(g, C / groups)``.
    """
    _check(input, groups, "groups", "channel_shuffle")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(
            f"channel_shuffle: number of channels must be divisible by groups, got "
            f"{c} channels (input shape {list(input.shape)}) and groups={groups}"
        )
    rest = tuple(input.shape[2:])
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)
