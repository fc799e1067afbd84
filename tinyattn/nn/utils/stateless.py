"""``functional_call``: run a module with some of its parameters and buffers replaced.

``functional_call(model, {"weight": w}, (x,))`` calls ``model(x)`` as if ``model.weight``
were ``w``, then puts the module's own tensors back (also when the call raises). The
module is not copied: the given tensors are swapped into its parameter and buffer
tables for the duration of the call. This is what makes a module usable inside the
transforms of ``tinyattn.func`` (gradients with respect to a dict of parameters,
``vmap`` over a stack of ensemble weights).

``tie_weights=True`` (torch's default): names that share one tensor in the module
(``decoder.weight`` tied to ``embedding.weight``) stay tied, so giving a value for one of
them replaces all of them; giving different values for two of them is an error.
``strict=True``: the dict must name every parameter and buffer, and nothing else.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ...foundations.type_names import type_name

__all__ = ["functional_call"]


def functional_call(
    module,
    parameters_and_buffers: dict,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` in place of its own tensors.

    torch's older entry point (deprecated since torch 2.0 in favour of
    ``tinyattn.func.functional_call``, which it equals for one dict); it warns as torch does.
    """
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
        "removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return call_with_tensors(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )


def call_with_tensors(
    module,
    parameter_and_buffer_dicts,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """The implementation shared by both ``functional_call`` entry points (no warning).

    ``parameter_and_buffer_dicts`` is one dict (name -> tensor) or a sequence of dicts
    with disjoint keys; ``args`` that is not a tuple is the single positional argument.
    """
    tensors = _merge(parameter_and_buffer_dicts)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        _check_strict(module, tensors)
    restore = [_swap(module, name, value) for name, value in tensors.items()]
    try:
        return module(*args, **kwargs)
    finally:
        for undo in reversed(restore):
            undo()


def _merge(dicts) -> dict:
    if isinstance(dicts, Mapping):
        return dict(dicts)
    if not isinstance(dicts, Sequence) or not all(isinstance(d, Mapping) for d in dicts):
        raise TypeError(
            "functional_call: expected parameter_and_buffer_dicts to be a dict or a sequence of "
            f"dicts, got {type_name(dicts)}"
        )
    merged: dict = {}
    repeated: list = []
    for d in dicts:
        for key, value in d.items():
            if key in merged:
                repeated.append(key)
            merged[key] = value
    if repeated:
        raise ValueError(
            f"{sorted(set(repeated))} appeared in multiple dictionaries; behavior of functional "
            "call is ambiguous"
        )
    return merged


def _all_names(module) -> dict[str, Any]:
    """Every parameter and buffer name (tied names included) -> its tensor."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(module, tensors: dict) -> dict:
    """``tensors`` plus, for each given name tied to others, the same value under those names."""
    groups: dict[int, list[str]] = {}
    for name, tensor in _all_names(module).items():
        groups.setdefault(id(tensor), []).append(name)
    result = dict(tensors)
    for names in groups.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in tensors]
        if not given:
            continue
        if any(tensors[n] is not tensors[given[0]] for n in given[1:]):
            raise ValueError(
                f"functional_call got multiple values for keys {given}, which are tied. "
                "Consider using tie_weights=False"
            )
        for n in names:
            result[n] = tensors[given[0]]
    return result


def _check_strict(module, tensors: dict) -> None:
    names = _all_names(module)
    unexpected = [k for k in tensors if k not in names]
    missing = [k for k in names if k not in tensors]
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append(f"\tUnexpected key(s): {', '.join(repr(k) for k in unexpected)}.")
        if missing:
            lines.append(f"\tMissing key(s): {', '.join(repr(k) for k in missing)}.")
        raise RuntimeError("\n".join(lines))


def _swap(module, name: str, value):
    """Put ``value`` at dotted ``name`` (a parameter, buffer or plain attribute); return the
    function that puts back what was there."""
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    for store in (owner._parameters, owner._buffers):
        if attr in store:
            old = store[attr]
            store[attr] = value

            def undo(store=store, old=old) -> None:
                store[attr] = old

            return undo
    missing = object()
    old = owner.__dict__.get(attr, missing)
    object.__setattr__(owner, attr, value)

    def undo_attribute() -> None:
        if old is missing:
            owner.__dict__.pop(attr, None)
        else:
            object.__setattr__(owner, attr, old)

    return undo_attribute
