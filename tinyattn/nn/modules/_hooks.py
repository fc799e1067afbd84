"""Module hooks: the handle every ``register_*_hook`` returns, the forward-hook call and
the load post-hooks.

Load pre-hooks run inside each module's ``_load_from_state_dict`` (``module.py``), on that
module's slice of the state dict, as torch's do. Post-hooks ``hook(module,
incompatible_keys)`` run after the values are written (children before parents; unlike
torch, which runs each right after its own module, every post-hook sees the complete
lists) and may edit the missing / unexpected key lists in place; the ``strict`` check
reads the lists after them, as torch's does.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*_hook``; ``remove()`` unregisters the hook.

    ``id`` is the hook's key in its store; usable as a context manager (removes on exit).
    """

    def __init__(self, store: OrderedDict) -> None:
        self.id = next(_ids)
        self._store = weakref.ref(store) if hasattr(store, "__weakref__") else lambda: store

    def remove(self) -> None:
        store = self._store()
        if store is not None:
            store.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def add_hook(store: OrderedDict, hook: Any) -> RemovableHandle:
    """Put ``hook`` last in ``store``; returns its handle."""
    handle = RemovableHandle(store)
    store[handle.id] = hook
    return handle


def add_forward_hook(module, store: str, hook, prepend: bool, flags: dict) -> RemovableHandle:
    """Register a forward (pre-)hook in ``module.<store>``; ``flags`` (``with_kwargs``,
    ``always_call``) are kept by hook id in ``module._forward_hook_flags``, as torch keeps
    them beside the hooks."""
    hooks = getattr(module, store)
    handle = add_hook(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    chosen = {name for name, on in flags.items() if on}
    if chosen:
        module.__dict__.setdefault("_forward_hook_flags", {})[handle.id] = chosen
    return handle


def call_with_forward_hooks(module, args: tuple, kwargs: dict, backward=None):
    """``module(*args, **kwargs)`` with its forward pre-hooks before and hooks after
    ``forward``, in registration order (torch's ``_call_impl``). ``backward`` (a
    ``ModuleBackwardHooks`` or None) wraps the args after the pre-hooks and the output
    after the hooks, so that the backward hooks see the gradients of what ``forward`` saw."""
    flags = module.__dict__.get("_forward_hook_flags", {})
    args, kwargs = _run_forward_pre_hooks(module, args, kwargs, flags)
    if backward is not None:
        args = backward.wrap_inputs(args)
    try:
        out = module.forward(*args, **kwargs)
    except Exception:
        for key, hook in list(module._forward_hooks.items()):
            if "always_call" in flags.get(key, ()):
                _run_forward_hook(module, hook, flags.get(key, ()), args, kwargs, None)
        raise
    for key, hook in list(module._forward_hooks.items()):
        result = _run_forward_hook(module, hook, flags.get(key, ()), args, kwargs, out)
        out = out if result is None else result
    if backward is not None:
        out = backward.wrap_outputs(out)
    return out


def _run_forward_pre_hooks(module, args: tuple, kwargs: dict, flags: dict) -> tuple:
    """``(args, kwargs)`` after the forward pre-hooks (a hook's non-None result replaces them)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if "with_kwargs" in flags.get(key, ()):
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    return args, kwargs


def _run_forward_hook(module, hook, flags, args: tuple, kwargs: dict, out):
    if "with_kwargs" in flags:
        return hook(module, args, kwargs, out)
    return hook(module, args, out)


class WrappedHook:
    """A load pre-hook, called with its module first when registered ``with_module``.

    The module is held weakly (a hook must not keep its module alive), as torch's.
    """

    def __init__(self, hook: Callable, module=None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict:
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        self.hook, self.with_module = state["hook"], state["with_module"]
        if self.with_module:
            self.module = weakref.ref(state["module"])


def run_load_post_hooks(module, incompatible_keys) -> None:
    """Each module's post-hooks, children first (torch's order), after the values are written."""
    for child in module._modules.values():
        if child is not None:
            run_load_post_hooks(child, incompatible_keys)
    for hook in module._load_state_dict_post_hooks.values():
        if hook(module, incompatible_keys) is not None:
            raise AssertionError(
                "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                "expected to return new values, if incompatible_keys need to be modified, "
                "it should be done inplace."
            )
