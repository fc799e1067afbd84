"""``Module``: the base of every layer, with torch's registration and state-dict rules.

Assigning a ``Parameter`` or a ``Module`` to an attribute registers it; buffers
are registered with ``register_buffer``. ``state_dict`` keys are dotted paths
(``"encoder.layers.0.self_attn.in_proj_weight"``), the same as torch's, so a
torch ``state_dict`` loads unchanged.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator

import numpy as np

from ...autograd.grad_mode import no_grad
from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from ..parameter import Parameter
from ._backward_hooks import (
    ModuleBackwardHooks,
    any_global_backward_hooks,  # noqa: F401  (a name other modules read from here)
    global_backward_hooks,
    global_backward_pre_hooks,
    global_non_full_backward_hooks,
    register_module_backward_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from ._hooks import (
    RemovableHandle,
    WrappedHook,
    add_forward_hook,
    add_hook,
    call_with_forward_hooks,
)

_NOTHING: dict = {}  # (the stores a Module has before ``__init__`` made them)

__all__ = [
    "Module",
    "register_module_backward_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
]

_STATE_HOOK_STORES = (
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class _IncompatibleKeys:
    def __init__(self, missing_keys: list[str], unexpected_keys: list[str]) -> None:
        self.missing_keys = missing_keys
        self.unexpected_keys = unexpected_keys

    def __iter__(self):
        return iter((self.missing_keys, self.unexpected_keys))

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )


class Module:
    """Base class for all neural-network modules; subclass and define ``forward``."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments; Module.__init__ takes none"
            )
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)
        for store in _STATE_HOOK_STORES:
            object.__setattr__(self, store, OrderedDict())

    # -- forward ------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
            # (any_global_backward_hooks() without the call: these tables change in place)
            or global_backward_hooks
            or global_backward_pre_hooks
            or global_non_full_backward_hooks
        ):
            return self.forward(*args, **kwargs)
        return call_with_forward_hooks(self, args, kwargs, self._backward_hooks_for_call())

    def _backward_hooks_for_call(self) -> ModuleBackwardHooks | None:
        """This call's backward hooks (global first, then the module's), or None."""
        full, non_full = self._get_backward_hooks()
        pre = self._get_backward_pre_hooks()
        if not (full or non_full or pre):
            return None
        if non_full:
            self._maybe_warn_non_full_backward_hook(None, None, None)
        return ModuleBackwardHooks(self, full + non_full, pre)

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
        output)``) after ``forward``; a non-None result replaces the output. ``prepend``:
        before the hooks already registered; ``always_call``: also when forward raises."""
        flags = {"with_kwargs": with_kwargs, "always_call": always_call}
        return add_forward_hook(self, "_forward_hooks", hook, prepend, flags)

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, args)`` before ``forward``; a non-None result replaces the args
        (``with_kwargs``: ``hook(module, args, kwargs)`` returning ``(args, kwargs)``)."""
        flags = {"with_kwargs": with_kwargs}
        return add_forward_hook(self, "_forward_pre_hooks", hook, prepend, flags)

    # -- backward hooks (see ``_backward_hooks``) ------------------------------------------
    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` once the gradients w.r.t. the module's
        inputs are computed; a non-None result replaces ``grad_input``.

        ``grad_input`` has one entry per positional argument (None for a non-tensor),
        ``grad_output`` one per output tensor. ``prepend``: before the hooks already here.
        """
        return self._add_backward_hook(self._backward_hooks, hook, prepend, full=True)

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, grad_output)`` when the gradients w.r.t. the module's outputs
        arrive, before they flow into ``forward``'s graph; a non-None result replaces them."""
        return self._add_backward_hook(self._backward_pre_hooks, hook, prepend, full=None)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated: use :meth:`register_full_backward_hook`. Here the hook is called as a
        full hook (torch passes the gradients of the last op's inputs instead)."""
        return self._add_backward_hook(self._backward_hooks, hook, False, full=False)

    def _add_backward_hook(self, store, hook: Callable, prepend: bool, full) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type_name(hook)}")
        if full is not None:
            if self._is_full_backward_hook is (not full):
                raise RuntimeError(
                    "Cannot use both regular backward hooks and full backward hooks on a "
                    "single Module. Please use only one of them."
                )
            self._is_full_backward_hook = full
        handle = add_hook(store, hook)
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self) -> tuple[list, list]:
        """``(full hooks, non-full hooks)`` a call runs: the global ones first."""
        own = list(self.__dict__.get("_backward_hooks", {}).values())
        full = list(global_backward_hooks.values())
        non_full = list(global_non_full_backward_hooks.values())
        if self.__dict__.get("_is_full_backward_hook") is True:
            full += own
        elif self.__dict__.get("_is_full_backward_hook") is False:
            non_full += own
        return full, non_full

    def _get_backward_pre_hooks(self) -> list:
        """The backward pre-hooks a call runs: the global ones first."""
        own = list(self.__dict__.get("_backward_pre_hooks", {}).values())
        return list(global_backward_pre_hooks.values()) + own

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn) -> None:
        """Warn that deprecated (non-full) backward hooks are called as full hooks here,
        when this module has any; ``inputs``, ``result``, ``grad_fn`` are not needed."""
        if self._get_backward_hooks()[1]:
            warnings.warn(
                "Using a non-full backward hook is deprecated; tinyattn calls it as a full "
                "backward hook (grad_input w.r.t. the module's inputs). Please use "
                "register_full_backward_hook.",
                FutureWarning,
                stacklevel=3,
            )

    # -- state-dict hooks (see ``_hooks``) ----------------------------------------------
    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, prefix, keep_vars) -> None`` before ``state_dict`` saves."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata) -> None`` after ``state_dict``.

        The hook edits ``state_dict`` in place; returning anything else raises.
        """
        hook._from_public_api = True
        return add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The older post-hook: a returned dict replaces the root module's ``state_dict``."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return add_hook(self._state_dict_hooks, hook)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """``hook([module,] state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before loading; it may rewrite ``state_dict``."""
        return add_hook(
            self._load_state_dict_pre_hooks, WrappedHook(hook, self if with_module else None)
        )

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None`` before ``load_state_dict`` reads this module's keys."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys) -> None`` after ``load_state_dict``; it may edit
        ``incompatible_keys.missing_keys`` / ``.unexpected_keys`` in place (``strict`` reads them after)."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    # -- attribute registration ---------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(
                    f"cannot assign {type_name(value)} before Module.__init__() call"
                )
            object.__setattr__(self, name, value)
            return
        params, modules, buffers = self._parameters, self._modules, self._buffers
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            modules.pop(name, None)
            buffers.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type_name(value)}' as parameter '{name}' "
                    "(tinyattn.nn.Parameter or None expected)"
                )
            params[name] = None
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type_name(value)}' as child module '{name}'")
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type_name(value)}' as buffer '{name}'")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        # Parameters, buffers, then submodules. Unrolled, not a loop over the three store
        # names: a decode step reads ~230 of these (half the bytecodes of the loop).
        d = self.__dict__
        store = d.get("_parameters", _NOTHING)  # (absent while __init__ has not run)
        if name in store:
            return store[name]
        store = d.get("_buffers", _NOTHING)
        if name in store:
            return store[name]
        store = d.get("_modules", _NOTHING)
        if name in store:
            return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(
            set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        )

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or None, a declared-but-absent parameter) under ``name``."""
        if "." in name or not name:
            raise KeyError(f'parameter name can\'t contain "." or be empty, got {name!r}')
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type_name(param)}' object to parameter '{name}' "
                "(tinyattn.nn.Parameter or None required)"
            )
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a non-learnable tensor (a mask, running stats) saved in ``state_dict`` if persistent."""
        if "." in name or not name:
            raise KeyError(f'buffer name can\'t contain "." or be empty, got {name!r}')
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type_name(tensor)}' object to buffer '{name}' (Tensor or None required)"
            )
        if (
            name in self._parameters
            or name in self._modules
            or (name in self.__dict__ and name not in self._buffers)
        ):
            raise KeyError(f"attribute '{name}' already exists")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if "." in name or not name:
            raise KeyError(f'module name can\'t contain "." or be empty, got {name!r}')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        mod = self
        for part in target.split(".") if target else []:
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{part}`")
            mod = mod._modules[part]
        return mod

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``"bn.running_mean"``)."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner) if owner else self
        if name not in module._buffers:
            raise AttributeError(f"{module._get_name()} has no buffer `{name}`")
        return module._buffers[name]

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``; ``strict``: the name must exist."""
        owner, _, name = target.rpartition(".")
        parent = self.get_submodule(owner) if owner else self
        if strict and name not in parent._modules:
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        path, _, name = target.rpartition(".")
        return getattr(self.get_submodule(path), name)

    # -- traversal ----------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(
                memo, f"{prefix}.{name}" if prefix else name, remove_duplicate
            )

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """Every module of the tree, self first (a module shared twice once, unless
        ``remove_duplicate=False``)."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, get_members_fn, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ):
        """``(dotted name, member)`` for what ``get_members_fn(module)`` yields in each module
        (``named_parameters`` and ``named_buffers`` are this walk)."""
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                memo.add(id(v))
                yield (f"{module_prefix}.{k}" if module_prefix else k), v

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ):
        yield from self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(
            lambda m: m._buffers.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    # -- dtype / device -----------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replace every parameter's, buffer's and gradient's values by ``fn(tensor)``.

        ``to``, ``float``, ``double``, ``half``, ``type``, ``cpu`` and ``cuda`` go through
        here, so an override sees each conversion. As torch's: children first (when
        ``recurse``), ``fn`` runs under ``no_grad`` and a parameter stays the same object
        (its values are swapped, as ``param.data = fn(param)``). Unlike torch, a buffer also
        stays the same object (torch registers ``fn``'s result in its place).
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for store in (self._parameters, self._buffers):
                for t in store.values():
                    if t is not None:
                        _swap_values(t, fn)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(dtype)`` converts floating parameters and buffers; devices other than cpu raise."""
        from ...core.device import check_device

        target = kwargs.pop("dtype", None)
        check_device(kwargs.pop("device", None))
        for a in args:
            if isinstance(a, (dt.dtype, type, np.dtype)):
                target = a
            elif isinstance(a, Tensor):
                target = a.dtype
            else:
                check_device(a)
        if target is None:
            return self
        d = dt.to_dtype(target)
        if not d.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point dtypes, but got desired dtype={d}"
            )
        return self._apply(lambda t: t.to(d) if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Replace every parameter's and buffer's values by uninitialised ones of the same
        shape and dtype on ``device`` (``cpu`` only here)."""
        from ...ops.creation.factories import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse)

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer to ``dst_type`` (a dtype or legacy tensor type)."""
        return self._apply(lambda t: t.type(dst_type))

    def share_memory(self) -> Module:
        """This module: its tensors are NumPy arrays in this process (nothing to move)."""
        return self

    def get_extra_state(self):
        """Override (with ``set_extra_state``) to keep extra state; the base raises, as torch."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please override get_extra_state() in your module."
        )

    def set_extra_state(self, state) -> None:
        """Override (with ``get_extra_state``) to restore extra state; the base raises."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please override set_extra_state() in your module."
        )

    def float(self) -> Module:
        return self.to(dt.float32)

    def double(self) -> Module:
        return self.to(dt.float64)

    def half(self) -> Module:
        return self.to(dt.float16)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        """As torch's on a machine without CUDA: a module with tensors raises."""
        return self._apply(lambda t: t.cuda(device))

    # -- state dict ---------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``).

        Runs the state-dict pre-hooks, then saves this module and its children, then the
        post-hooks. The result carries torch's ``_metadata`` (``{prefix: {"version": v}}``).
        """
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.",
                FutureWarning,
                stacklevel=2,
            )
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """This module's own parameters, persistent buffers and extra state (when
        ``get_extra_state`` is overridden) into ``destination`` (``state_dict`` calls it for
        each module; subclasses override it to add entries)."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load parameters and buffers from ``state_dict`` (tensors, torch tensors or array-likes).

        Transactional: every value is converted and checked first, and one
        ``RuntimeError`` lists every problem (missing and unexpected keys in strict
        mode, size mismatches, values that are not numeric), each naming its key;
        the module is written only when nothing is wrong, so a failed load leaves
        it unchanged. ``assign=False`` copies each value into the existing tensor in
        that tensor's dtype (torch's ``param.copy_``); ``assign=True`` replaces the
        tensors by the loaded ones, keeping their dtype (parameters stay Parameters
        with the old ``requires_grad``). Returns ``(missing_keys, unexpected_keys)``.

        Load pre-hooks run first, each on its module's slice of the dict (they may rename
        legacy keys); post-hooks run after the values are written and may edit the key
        lists, so with post-hooks (or keys or errors added by pre-hooks) the ``strict``
        key check comes after writing, as in torch. Value errors never write.
        """
        from ._state_loading import load_state_dict

        return load_state_dict(self, state_dict, strict, assign, _IncompatibleKeys)

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Read this module's own entries (keys ``prefix + name``) from ``state_dict``.

        ``load_state_dict`` calls it for each module, parents first, with that module's
        slice of the dict: the load pre-hooks run, then the parameters, persistent buffers
        and extra state are read; keys not found go to ``missing_keys`` and keys under
        ``prefix`` naming nothing here to ``unexpected_keys``. Subclasses override it to
        rename legacy keys before calling ``super()._load_from_state_dict``. Inside
        ``load_state_dict`` the values are written once every module has been read.
        """
        from ._state_loading import load_own_state

        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)  # fmt: skip
        load_own_state(self, state_dict, prefix, local_metadata, strict, missing_keys,
                       unexpected_keys, error_msgs)  # fmt: skip

    # -- printing and copying -----------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = []
        for name, module in self._modules.items():
            mod_str = repr(module).replace("\n", "\n  ")
            child_lines.append(f"({name}): {mod_str}")
        body = lines + child_lines
        s = self._get_name() + "("
        if body:
            if len(lines) == 1 and not child_lines:
                s += lines[0]
            else:
                s += "\n  " + "\n  ".join(body) + "\n"
        return s + ")"

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        for store in (*_STATE_HOOK_STORES, "_backward_hooks", "_backward_pre_hooks"):
            self.__dict__.setdefault(store, OrderedDict())  # (pickled before they existed)
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __getstate__(self):
        return self.__dict__


def _swap_values(t: Tensor, fn: Callable[[Tensor], Tensor]) -> None:
    """``t``'s values (and its gradient's) become ``fn``'s result, keeping the object."""
    new = fn(t)
    if not isinstance(new, Tensor):
        raise TypeError(f"Module._apply(): fn must return a Tensor, got {type_name(new)}")
    if new is not t and new._data is not t._data:
        t._data = new._data
    if t.grad is not None:
        t.grad._data = fn(t.grad)._data
