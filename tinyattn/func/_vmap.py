"""``vmap``: map a function over a batch dimension, as ``torch.func.vmap``.

This ``vmap`` is a loop, not a batching-rule system. ``vmap(f)(x)`` slices every
batched input along its ``in_dim`` (``x.select(in_dim, i)``), calls ``f`` once per
sample, and stacks each output along its ``out_dim``. torch instead runs ``f`` once
on "batched tensors" and each op applies its own batching rule, which is one
vectorised call per op.

What the loop gives: every function works (any op, Python control flow on values,
``.item()``), the results equal a Python loop over samples, and it composes with the
other transforms (``vmap(grad(f))`` gives per-sample gradients, ``vmap(vmap(f))`` nests).
What it costs: ``B`` calls of ``f`` instead of one, so ``f``'s per-call overhead
(Python, small-array ops, one backward per sample under ``grad``) is paid ``B`` times;
for large per-sample work it is close to the batched cost, for tiny samples it can be
tens of times slower than torch. ``chunk_size`` is accepted and checked; the loop
processes one sample at a time whatever its value.

Differences from torch that follow from the loop:
* ``randomness``: ``'different'`` draws per sample (the loop does this by itself);
  ``'same'`` restores the global generator's state before each sample; ``'error'``
  raises when a call drew from the global generator (the state changed). Random ops
  given their own ``generator=`` are not seen.
* a batch of size 0 calls ``f`` once on zeros shaped like one sample, to learn the
  output shapes, and returns empty outputs.
* ``out_dims=None`` returns the first sample's output and raises (as torch does) when
  another sample's output differs from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import random as _random
from .. import stack, zeros
from ..tensor_api.tensor import Tensor
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over dimension ``in_dims`` of its inputs (``torch.func.vmap``).

    Parameters
    ----------
    func : callable
        Takes pytrees of tensors, returns a tensor or a pytree of tensors.
    in_dims : int, None or a pytree prefix of the positional arguments
        The dimension of each input to map over (None: pass the input to every call
        unchanged). An int applies to every tensor. Keyword arguments are never mapped.
    out_dims : int, None or a pytree prefix of the outputs
        Where the batch dimension goes in each output.
    randomness : {'error', 'different', 'same'}
    chunk_size : int, optional
        Checked (None or > 0) and otherwise unused: the loop runs one sample at a time.

    Returns
    -------
    callable
        With inputs batched ``(B, ...)`` along ``in_dims``, returns ``func``'s outputs
        stacked along ``out_dims``: output ``k`` equals ``stack([func(x[i]) ...], out_dim)``.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        name = getattr(func, "__name__", repr(func))
        flat_args, args_spec = tree_flatten(args)
        flat_dims = _input_dims(name, in_dims, args, flat_args)
        size = _batch_size(flat_args, flat_dims)
        if size == 0:
            samples = [_zero_sample(flat_args, flat_dims)]
        else:
            samples = [
                [x if d is None else x.select(d, i) for x, d in zip(flat_args, flat_dims)]
                for i in range(size)
            ]
        outputs = _call_each(func, samples, args_spec, kwargs, randomness)
        return _stack_outputs(name, outputs, out_dims, size)

    return wrapped


def _input_dims(name: str, in_dims: Any, args: tuple, flat_args: list) -> list:
    """One in_dim (an int >= 0, or None) per leaf of ``args``, with torch's messages."""
    head = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(
            f"{head}: expected `in_dims` to be int or a (potentially nested) tuple matching "
            f"the structure of inputs, got: {type(in_dims)}."
        )
    flat_dims = broadcast_prefix(in_dims, args)
    if flat_dims is None:
        raise ValueError(
            f"{head}: in_dims is not compatible with the structure of `inputs`. in_dims has "
            f"structure {tree_flatten(in_dims)[1]!r} but inputs has structure "
            f"{tree_flatten(args)[1]!r}."
        )
    result = []
    for x, d in zip(flat_args, flat_dims):
        if d is None:
            result.append(None)
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"{head}: Got in_dim={d} for an input but in_dim must be either an integer "
                "dimension or None."
            )
        if not isinstance(x, Tensor):
            raise ValueError(
                f"{head}: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                "cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
            )
        if not -x.dim() <= d < x.dim():
            raise ValueError(
                f"{head}: Got in_dim={d} for some input, but that input is a Tensor of "
                f"dimensionality {x.dim()} so expected in_dim to satisfy "
                f"-{x.dim()} <= in_dim < {x.dim()}."
            )
        result.append(d % x.dim())
    return result


def _batch_size(flat_args: list, flat_dims: list) -> int:
    sizes = [x.shape[d] for x, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _zero_sample(flat_args: list, flat_dims: list) -> list:
    """Zeros shaped like one sample of each batched input (batch of size 0)."""
    return [
        x if d is None else zeros(*(n for k, n in enumerate(x.shape) if k != d), dtype=x.dtype)
        for x, d in zip(flat_args, flat_dims)
    ]


def _call_each(func: Callable, samples: list, args_spec, kwargs: dict, randomness: str) -> list:
    """``func`` on each sample, under the ``randomness`` rule."""
    outputs = []
    start = _random.get_rng_state() if randomness != "different" else None
    for sample in samples:
        if randomness == "same":
            _random.set_rng_state(start)
        outputs.append(func(*tree_unflatten(sample, args_spec), **kwargs))
        if randomness == "error" and _random.get_rng_state() != start:
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap"
            )
    return outputs


def _stack_outputs(name: str, outputs: list, out_dims: Any, size: int) -> Any:
    """Stack per-sample outputs leaf by leaf along each leaf's out_dim."""
    flats = [tree_flatten(o) for o in outputs]
    leaves0, spec = flats[0]
    if not isinstance(out_dims, (int, tuple, list)) and out_dims is not None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
            "python collection of ints representing where in the outputs the vmapped "
            "dimension should appear."
        )
    flat_out_dims = broadcast_prefix(out_dims, outputs[0])
    if flat_out_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]!r} "
            f"but outputs has structure {spec!r}."
        )
    for _, s in flats[1:]:
        if s != spec:
            raise ValueError(
                f"vmap({name}, ...): `{name}` returned outputs of different structures for "
                f"different samples: {spec!r} and {s!r}"
            )
    result = []
    for k, (leaf, d) in enumerate(zip(leaves0, flat_out_dims)):
        column = [leaves[k] for leaves, _ in flats]
        if d is None:
            result.append(_unbatched(name, column))
            continue
        for value in column:
            if not isinstance(value, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                    f"{type(value)}. Did you mean to set out_dims= to None for output?"
                )
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                "python collection of ints representing where in the outputs the vmapped "
                "dimension should appear."
            )
        rank = leaf.dim() + 1
        if not -rank <= d < rank:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], "
                f"but got {d})"
            )
        if size == 0:
            shape = list(leaf.shape)
            shape.insert(d % rank, 0)
            result.append(zeros(*shape, dtype=leaf.dtype))
        else:
            result.append(stack(column, dim=d % rank))
    return tree_unflatten(result, spec)


def _unbatched(name: str, column: list) -> Any:
    """The output for ``out_dim=None``: the same for every sample, else torch's error."""
    first = column[0]
    for value in column[1:]:
        same = (
            value.shape == first.shape and bool((value == first).all())
            if isinstance(first, Tensor) and isinstance(value, Tensor)
            else value is first or value == first
        )
        if not same:
            raise ValueError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
    return first
