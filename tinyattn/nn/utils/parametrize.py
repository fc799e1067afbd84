"""``nn.utils.parametrize``: a module attribute computed from other tensors, as torch's.

After ``register_parametrization(module, "weight", P)``, ``module.weight`` is no longer a
stored parameter but ``P(original)``, recomputed on every access (or once per
``cached()`` block). The stored tensor moves to ``module.parametrizations.weight.original``
(``state_dict`` key ``parametrizations.weight.original``). Several parametrizations on
one tensor compose: ``weight = P_n(...P_2(P_1(original)))``. Gradients reach
``original`` through the tinyattn ops each ``P`` is written in.

The mechanics are torch's: the module's class is swapped for a generated subclass
``Parametrized<Class>`` carrying a ``property`` per parametrized name (getter: evaluate
the chain; setter: ``right_inverse``), and swapped back when the last parametrization
is removed.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

from ...autograd.grad_mode import no_grad
from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within this block each parametrized tensor is computed once, on first access, and reused.

    Useful when a parametrized weight is read many times per step (an RNN's
    recurrent weight). The cache is emptied when the outermost block exits.
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """``dest.set_(src)``: ``dest`` keeps its identity (optimizers hold it) and takes ``src``'s data."""
    dest._data = src._data
    dest._bump_version()


def _check_same(header: str, first: str, second: str, a: Tensor, b: Tensor) -> None:
    """Raise torch's ``ValueError`` when ``a`` and ``b`` differ in dtype or shape.

    ``header`` has a ``{what}`` slot for "dtype" / "shape".
    """
    for what in ("dtype", "shape"):
        if getattr(a, what) != getattr(b, what):
            raise ValueError(
                header.format(what=what)
                + f"\n{first}.{what}: {getattr(b, what)}\n{second}{what}: {getattr(a, what)}"
            )


_UNSAFE = "unless `unsafe` flag is enabled."


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the tensor(s) they start from.

    ``module.parametrizations[name]``. Holds ``original`` (or ``original0``,
    ``original1``, ... when the first parametrization's ``right_inverse`` returns a
    sequence) and evaluates ``self[n-1](...self[1](self[0](original)))``.

    At registration ``original`` is replaced in place by ``right_inverse(original)``
    (applied from the last parametrization to the first; a missing ``right_inverse``
    counts as the identity), so that ``module.weight`` keeps its value. Unless
    ``unsafe``, the chain's output must keep the tensor's dtype and shape.
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type_name(new)}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, original_i in enumerate(new):
                if not isinstance(original_i, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        "(list, tuple...). "
                        f"Got element {i} of the sequence with type {type_name(original_i)}."
                    )
                if isinstance(original, Parameter):
                    original_i = Parameter(original_i, original.requires_grad)
                original_i.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", original_i)
        if not self.unsafe:
            with no_grad():
                z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type_name(z)}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    f"{_UNSAFE}\nunparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}"
                )
            if z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    f"{_UNSAFE}\nunparametrized shape: {original_shape}\nparametrized shape: {z.shape}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` as the parametrized tensor: ``original <- right_inverse_1(...right_inverse_n(value))``.

        Every parametrization must define ``right_inverse``. ``original`` keeps its
        identity (its data is replaced), so optimizers holding it stay valid.
        """
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type_name(value)}"
                    )
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                _maybe_set(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(
                    f"'right_inverse' must return a sequence of tensors. Got {type_name(value)}."
                )
            if len(value) != self.ntensors:
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors of length "
                    f"{self.ntensors}. Got a sequence of length {len(value)}."
                )
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors. "
                        f"Got element {i} of type {type_name(tensor)}."
                    )
                if original_i.dtype != tensor.dtype:
                    raise ValueError(
                        f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                        f"while `original{i}` has dtype {original_i.dtype}"
                    )
                _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: ``self[0]`` applied to the original(s), then each later one in turn."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy_module(self, memo):
    """``copy.deepcopy`` of a parametrized module (its ``__getstate__`` refuses pickling)."""
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _refuse_pickling(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _inject_new_class(module: Module) -> None:
    """Swap ``module``'s class for a fresh subclass ``Parametrized<Class>`` to hang properties on."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_module
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Add the property ``tensor_name`` (get: evaluate the chain; set: ``right_inverse``) to the swapped class."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (torch's semantics).

    The first registration on a name moves the parameter or buffer to
    ``module.parametrizations[tensor_name].original`` (after applying
    ``parametrization.right_inverse`` if it has one) and swaps the module's class for a
    ``Parametrized`` subclass; later ones append to the chain. Without ``unsafe`` the
    parametrization must keep the tensor's dtype and shape, and so must its
    ``right_inverse``. Returns ``module``.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type_name(x)}.")
            _check_same(
                "Registering a parametrization may not change the {what} of the tensor, "
                "unless the `unsafe` flag is enabled.",
                f"module.{tensor_name}",
                f"parametrization(module.{tensor_name}).",
                x,
                y,
            )
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(
                            f"parametrization.right_inverse must return a tensor. Got: {type_name(z)}"
                        )
                    _check_same(
                        "The tensor returned by parametrization.right_inverse must have the same "
                        f"{{what}} as module.{tensor_name}, unless the `unsafe` flag is enabled.",
                        f"module.{tensor_name}",
                        "returned ",
                        z,
                        y,
                    )
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a "
            f"parametrized element with name '{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = module._modules.get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo the parametrizations on ``tensor_name``; the class is restored when none remain.

    ``leave_parametrized=True``: the tensor keeps its current parametrized value (written
    into the original ``Parameter`` object in place, so optimizers stay valid).
    ``leave_parametrized=False``: it goes back to the stored ``original`` (not possible
    when ``right_inverse`` split it into several tensors).
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _maybe_set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
            "that is parametrized in terms of a sequence of tensors."
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization swapped it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Copy the parametrizations (and their originals) on ``tensor_name`` (default: all) to ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        if source.is_tensor:
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
