"""``LazyModuleMixin``: what every lazy module (``LazyLinear``, ``LazyConv2d``,
``LazyBatchNorm1d`` ...) shares, with torch's method names.

A lazy module holds ``UninitializedParameter`` / ``UninitializedBuffer`` placeholders
until it sees its first input (or a ``state_dict``). Then ``initialize_parameters(input)``
(defined by each lazy class) materialises them with the shapes the input implies, and
the module becomes its eager class (``LazyLinear`` -> ``Linear``).

The steps, as torch names them and subclasses call them:

* ``has_uninitialized_params()``: whether a placeholder is left;
* ``_infer_parameters(module, args, kwargs=None)``: torch's forward pre-hook:
  ``initialize_parameters(*args, **kwargs)``, then checks nothing is left uninitialised;
* ``_lazy_load_hook(state_dict, prefix, ...)``: torch's load pre-hook: materialises each
  placeholder whose key is in ``state_dict`` with the stored shape.

Difference from torch: the switch to the eager class happens in the lazy class's
``forward`` (right after these steps), not inside ``_infer_parameters``; and loading a
state dict materialises placeholders in ``load_state_dict`` itself, so ``_lazy_load_hook``
is not registered as a hook (it is there for code that calls it).
"""

from __future__ import annotations

from typing import Any

from .._lazy_buffer import UninitializedBuffer
from ..parameter import UninitializedParameter

__all__ = ["LazyModuleMixin"]

_PLACEHOLDERS = (UninitializedParameter, UninitializedBuffer)


class LazyModuleMixin:
    """Mixin of the lazy modules: placeholders materialised from the first input."""

    cls_to_become: type | None = None

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still an uninitialised placeholder."""
        stores = (*self._parameters.values(), *self._buffers.values())  # type: ignore[attr-defined]
        return any(isinstance(t, _PLACEHOLDERS) for t in stores)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialise the placeholders from the forward arguments (each lazy class's own)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )

    def _infer_parameters(self, module: Any, args: Any, kwargs: dict | None = None) -> None:
        """Initialise ``module``'s parameters from its forward ``args`` / ``kwargs``
        (torch runs this as a forward pre-hook of a lazy module)."""
        args = args if isinstance(args, tuple) else (args,)
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")

    def _lazy_load_hook(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list,
        unexpected_keys: list,
        error_msgs: list,
    ) -> None:
        """Materialise each placeholder whose ``prefix + name`` is in ``state_dict`` with the
        stored shape (the values are copied by ``load_state_dict`` afterwards); a shape the
        module cannot take is reported in ``error_msgs``."""
        check = getattr(self, "_check_lazy_load", None)
        for store in (self._parameters, self._buffers):  # type: ignore[attr-defined]
            for name, t in store.items():
                key = prefix + name
                if not isinstance(t, _PLACEHOLDERS) or key not in state_dict:
                    continue
                shape = tuple(getattr(state_dict[key], "shape", ()))
                problem = check(name, shape) if check is not None else None
                if problem:
                    error_msgs.append(f"size mismatch for {key}: {problem}")
                    continue
                t.materialize(shape, dtype=t.dtype)
