"""Optimizer hooks (``register_step_pre_hook`` ...): what runs around ``step`` and the state dicts.

A hook store is an ordered dict ``{id: hook}``; a handle's ``remove()`` deletes its entry.
Every ``Optimizer`` subclass that defines ``step`` gets it wrapped once, when the class
is created (``Optimizer.__init_subclass__``), by ``hooked_step``: global then
per-optimizer pre-hooks, the step, then per-optimizer then global post-hooks, the
order torch uses. A pre-hook may return ``(new_args, new_kwargs)`` (``args`` starting
with the optimizer) to change what ``step`` receives.
"""

from __future__ import annotations

import functools
import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..foundations.type_names import type_name

_ids = itertools.count()

# Hooks for every optimizer: ``torch.optim.optimizer.register_optimizer_step_*_hook``.
_global_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()


class RemovableHandle:
    """Returned by every ``register_*_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, store: OrderedDict[int, Callable]) -> None:
        self.id = next(_ids)
        self._store = store

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def add_hook(store: OrderedDict[int, Callable], hook: Callable, prepend: bool = False):
    """Register ``hook`` in ``store`` (first if ``prepend``); returns its handle."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, but got {type_name(hook)}")
    handle = RemovableHandle(store)
    store[handle.id] = hook
    if prepend:
        store.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    return add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return add_hook(_global_step_post_hooks, hook)


def _hooks(optimizer: Any, name: str) -> list[Callable]:
    return list(getattr(optimizer, name, {}).values())


def hooked_step(step: Callable) -> Callable:
    """``step`` with the step hooks around it (once per call, even through ``super().step``)."""

    @functools.wraps(step)
    def step_with_hooks(*args: Any, **kwargs: Any):
        optimizer = args[0]
        if getattr(optimizer, "_in_hooked_step", False):  # a subclass's step calling super's
            return step(*args, **kwargs)
        pre = list(_global_step_pre_hooks.values()) + _hooks(optimizer, "_optimizer_step_pre_hooks")
        for hook in pre:
            result = hook(optimizer, args, kwargs)
            if result is None:
                continue
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(
                    f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                    f"{result}."
                )
            args, kwargs = result
        optimizer._in_hooked_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            optimizer._in_hooked_step = False
        post = _hooks(optimizer, "_optimizer_step_post_hooks") + list(
            _global_step_post_hooks.values()
        )
        for hook in post:
            hook(optimizer, args, kwargs)
        return out

    step_with_hooks.hooked = True
    return step_with_hooks
