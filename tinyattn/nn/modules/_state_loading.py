"""``Module.load_state_dict``, transactional: convert and check every value, then write.

Torch copies each value into the existing tensor in key order and stops at the first
bad one, so a failure can leave a model half-loaded. tinyattn first converts and checks
every value (type, dtype, shape, lazy shapes, missing / unexpected keys) and raises one
``RuntimeError`` listing every problem, naming each key; only when nothing is wrong
does it write, so a failed load leaves the module unchanged, bit for bit.

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

from collections.abc import Mapping

import numpy as np

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...core import _dtype as dt
from .._lazy_buffer import UninitializedBuffer
from ..parameter import Parameter, UninitializedParameter

_TENSOR_NP_DTYPES = {d.np_dtype for d in dt._ALL}


def _slots(module, prefix: str = ""):
    """``(key, owner, name, is_parameter)`` in ``state_dict`` order."""
    for name, p in module._parameters.items():
        if p is not None:
            yield prefix + name, module, name, True
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers_set:
            yield prefix + name, module, name, False
    for name, child in module._modules.items():
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


def load_state_dict(module, state_dict, strict: bool, assign: bool):
    """See ``Module.load_state_dict``; returns ``(missing_keys, unexpected_keys)``."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    slots = list(_slots(module))
    own = {s[0] for s in slots}
    missing = [s[0] for s in slots if s[0] not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    errors, plan = [], []
    for key, owner, name, is_param in slots:
        if key not in state_dict:
            continue
        try:
            plan.append(
                (
                    owner,
                    name,
                    is_param,
                    _prepare(key, owner, name, is_param, state_dict[key], assign),
                )
            )
        except ValueError as err:
            errors.append(str(err))
    if strict:
        if unexpected:
            errors.insert(
                0,
                "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".",
            )
        if missing:
            errors.insert(
                0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + "."
            )
    if errors:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(errors)
        )
    _write(plan, assign)
    return missing, unexpected


def _write(plan, assign: bool) -> None:
    """Apply a checked plan; nothing here can fail on the values."""
    with no_grad():
        for owner, name, is_param, new in plan:
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
