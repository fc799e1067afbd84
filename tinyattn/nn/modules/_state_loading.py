"""``Module.load_state_dict``, transactional: convert and check every value, then write.

The walk is torch's: each module's ``_load_from_state_dict`` runs on its slice of the dict
(parents first; an override may rename keys), runs its load pre-hooks and reads its own
entries. Torch copies each value as it reads it, so a bad value can leave a model
half-loaded. tinyattn's reads only add to a plan: every value is converted and checked
(type, dtype, shape, lazy shapes, missing / unexpected keys) and one ``RuntimeError``
lists every problem, naming each key; only when nothing is wrong does it write, so a
failed load leaves the module unchanged, bit for bit. (With load post-hooks, which may
clear the key lists, a ``strict`` key error is raised after writing, as torch's.)

Values follow torch's rules:

* default (``assign=False``): the value is copied into the existing tensor, converted
  to that tensor's dtype (``param.copy_(value)``: float -> int truncates toward zero);
  the parameter object, its dtype and its ``requires_grad`` stay;
* ``assign=True``: the module's tensor is replaced by the loaded one, keeping the
  loaded dtype. A parameter stays a ``Parameter`` with the old ``requires_grad`` (a
  loaded ``Parameter`` is used as is, a plain tensor is wrapped and shares its memory);
  a buffer becomes the loaded tensor.

tinyattn also accepts NumPy arrays and nested lists of numbers (torch accepts tensors
only); object, string, complex and date arrays are refused, naming the key.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar

import numpy as np

from ...autograd.grad_mode import no_grad
from ...core import _dtype as dt
from ...tensor_api.tensor import Tensor
from .._lazy_buffer import UninitializedBuffer
from ..parameter import Parameter, UninitializedParameter

_TENSOR_NP_DTYPES = {d.np_dtype for d in dt._ALL}


def _slots(module, prefix: str = "", recurse: bool = True):
    """``(key, owner, name, is_parameter)`` in ``state_dict`` order."""
    for name, p in module._parameters.items():
        if p is not None:
            yield prefix + name, module, name, True
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers_set:
            yield prefix + name, module, name, False
    for name, child in module._modules.items() if recurse else ():
        if child is not None:
            yield from _slots(child, prefix + name + ".")


def _value_array(value) -> np.ndarray:
    """The value's data as an array; ``TypeError`` with a reason if it is not numeric."""
    if isinstance(value, Tensor):
        return value._data
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "numpy"):
        return np.asarray(value.detach().cpu().numpy())  # a torch tensor
    if value is None or isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"received {type(value)}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:
        raise TypeError(f"received {type(value)} that is not array-like: {err}") from None
    return arr


def _prepare(key, owner, name, is_param, value, assign: bool):
    """What to write for one key, or raise ``ValueError`` with the message to report."""
    target = (owner._parameters if is_param else owner._buffers)[name]
    what = "parameter" if is_param else "buffer"
    try:
        arr = _value_array(value)
    except TypeError as err:
        raise ValueError(
            f'While copying the {what} named "{key}", expected a tensor or a numeric '
            f"array-like from checkpoint but {err}"
        ) from None
    if arr.dtype.kind not in "biufc":
        raise ValueError(
            f'While copying the {what} named "{key}", expected numbers from checkpoint but '
            f"received an array of dtype {arr.dtype} (object, string and date arrays cannot "
            "be loaded into a tensor)"
        )
    if arr.dtype.kind == "c" and not assign and target._data.dtype.kind != "c":
        raise ValueError(
            f'While copying the {what} named "{key}": a complex value from checkpoint cannot '
            f"be copied into a real {what} of dtype {target._data.dtype} without losing its "
            "imaginary part"
        )
    lazy = isinstance(target, (UninitializedParameter, UninitializedBuffer))
    if not lazy and target._data.ndim == 0 and arr.shape == (1,):
        arr = arr.reshape(())  # torch loads a (1,) value into a 0-d tensor
    if lazy:
        check = getattr(owner, "_check_lazy_load", None)
        problem = check(name, arr.shape) if check is not None else None
        if problem:
            raise ValueError(f"size mismatch for {key}: {problem}")
    elif arr.shape != target._data.shape:
        raise ValueError(
            f"size mismatch for {key}: copying a param with shape {list(arr.shape)} from "
            f"checkpoint, the shape in current model is {list(target._data.shape)}."
        )
    if not assign:
        dtype = target._data.dtype if not lazy else _lazy_dtype(owner)
        with np.errstate(invalid="ignore", over="ignore"):
            return np.array(arr, dtype=dtype, order="C")  # a fresh copy, never an alias
    if arr.dtype not in _TENSOR_NP_DTYPES:
        raise ValueError(
            f'While copying the {what} named "{key}": dtype {arr.dtype} is not a tinyattn '
            "tensor dtype (assign=True keeps the loaded dtype)"
        )
    if isinstance(value, Tensor):
        tensor = value
    else:  # NumPy or torch memory is copied: the module must not alias a foreign buffer
        tensor = Tensor._make(np.array(arr, order="C"))
    if not is_param:
        return tensor
    if target.requires_grad and arr.dtype.kind != "f":
        raise ValueError(
            f'While copying the parameter named "{key}": the parameter requires grad but the '
            f"loaded tensor has dtype {arr.dtype} (only floating tensors can require grad)"
        )
    if isinstance(tensor, Parameter):
        return tensor
    return Parameter(tensor.detach(), requires_grad=False)


def _lazy_dtype(owner) -> np.dtype:
    """Torch materialises a lazy parameter in the module's own dtype, not the checkpoint's."""
    wanted = getattr(owner, "_dtype", None)
    return (dt.to_dtype(wanted) if wanted is not None else dt.get_default_dtype()).np_dtype


class _Plan:
    """What one ``load_state_dict`` call will write, gathered module by module; written
    only once every module has been read and nothing is wrong."""

    def __init__(self, assign: bool) -> None:
        self.assign = assign
        self.writes: list = []  # (owner, name, is_param, value)
        self.extra_states: list = []  # (module, state) for set_extra_state
        self.value_errors: list[str] = []


_PLAN: ContextVar[_Plan | None] = ContextVar("tinyattn_load_plan", default=None)


def load_own_state(module, state_dict, prefix: str, local_metadata, strict: bool,
                   missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:  # fmt: skip
    """``Module._load_from_state_dict`` after its pre-hooks: read this module's own
    parameters, persistent buffers and extra state from ``state_dict`` (keys under
    ``prefix``), noting missing and unexpected keys as torch does. Inside
    ``load_state_dict`` the values join the call's plan; called alone, it writes now."""
    plan = _PLAN.get()
    alone = plan is None
    if alone:
        plan = _Plan(bool(local_metadata.get("assign_to_params_buffers", False)))
    for key, owner, name, is_param in _slots(module, prefix, recurse=False):
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        try:
            value = _prepare(key, owner, name, is_param, state_dict[key], plan.assign)
            plan.writes.append((owner, name, is_param, value))
        except ValueError as err:
            plan.value_errors.append(str(err))
    extra_key = prefix + "_extra_state"
    if _has_extra_state(module, "set_extra_state"):
        if extra_key in state_dict:
            plan.extra_states.append((module, state_dict[extra_key]))
        elif strict:
            missing_keys.append(extra_key)
    if strict:
        unexpected_keys.extend(_unexpected(module, state_dict, prefix, extra_key))
    if alone:
        error_msgs.extend(plan.value_errors)
        _write(plan)


def _has_extra_state(module, method: str) -> bool:
    from .module import Module

    return getattr(type(module), method) is not getattr(Module, method)


def _unexpected(module, state_dict, prefix: str, extra_key: str) -> list[str]:
    """torch's rule: a key under ``prefix`` is unexpected unless its first component names
    a child (dotted key) or an own parameter / persistent buffer (plain key)."""
    own = {key[len(prefix) :] for key, *_ in _slots(module, prefix, recurse=False)}
    found = []
    for key in state_dict:
        if not key.startswith(prefix) or key == extra_key:
            continue
        head, dot, _ = key[len(prefix) :].partition(".")
        if (dot and head not in module._modules) or (not dot and head not in own):
            found.append(key)
    return found


def _walk(module, local: dict, prefix: str, metadata, assign: bool, keys: tuple) -> None:
    """torch's ``load``: this module's ``_load_from_state_dict`` on its slice of the dict
    (a fresh dict per child, so an override may rename keys), then its children."""
    local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
    if assign:
        local_metadata["assign_to_params_buffers"] = assign
    module._load_from_state_dict(local, prefix, local_metadata, True, *keys)
    for name, child in module._modules.items():
        if child is not None:
            child_prefix = prefix + name + "."
            child_local = {k: v for k, v in local.items() if k.startswith(child_prefix)}
            _walk(child, child_local, child_prefix, metadata, assign, keys)


def load_state_dict(module, state_dict, strict: bool, assign: bool, incompatible_keys):
    """See ``Module.load_state_dict``: walk, check, then write (or raise having written
    nothing when the outcome is already an error), then the post-hooks and ``strict``."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    metadata = getattr(state_dict, "_metadata", None)
    root = OrderedDict(state_dict)
    if metadata is not None:
        root._metadata = metadata  # type: ignore[attr-defined]
    plan, errors = _Plan(assign), []
    keys = incompatible_keys([], [])
    token = _PLAN.set(plan)
    try:
        _walk(module, root, "", metadata, assign, (keys.missing_keys, keys.unexpected_keys, errors))
    finally:
        _PLAN.reset(token)
    post_hooks = any(m._load_state_dict_post_hooks for m in module.modules())
    if plan.value_errors or not post_hooks:
        _raise_if_any(module, _key_errors(keys, strict) + errors + plan.value_errors)
    _write(plan)
    from ._hooks import run_load_post_hooks

    run_load_post_hooks(module, keys)
    _raise_if_any(module, _key_errors(keys, strict) + errors)
    return keys


def _key_errors(keys, strict: bool) -> list[str]:
    if not strict:
        return []
    found = []
    if keys.missing_keys:
        found.append(
            "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in keys.missing_keys) + "."
        )
    if keys.unexpected_keys:
        found.append(
            "Unexpected key(s) in state_dict: "
            + ", ".join(f'"{k}"' for k in keys.unexpected_keys)
            + "."
        )
    return found


def _raise_if_any(module, errors: list[str]) -> None:
    if errors:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(errors)
        )


def _write(plan: _Plan) -> None:
    """Apply a checked plan; nothing here can fail on the values."""
    assign = plan.assign
    with no_grad():
        for owner, name, is_param, new in plan.writes:
            store = owner._parameters if is_param else owner._buffers
            target = store[name]
            if assign:
                if is_param:
                    new.requires_grad_(target.requires_grad)
                store[name] = new
                continue
            if isinstance(target, (UninitializedParameter, UninitializedBuffer)):
                target.materialize(new.shape, dtype=dt.from_numpy_dtype(new.dtype))
            target._data[...] = new
            target._bump_version()
    for module, state in plan.extra_states:
        module.set_extra_state(state)
