"""The keywords torch's tensor factories take and a CPU tensor library has no use for.

``torch.zeros(2, layout=torch.strided, pin_memory=False)`` is a valid call; so are
``torch.empty_like(x, memory_format=torch.preserve_format)``, ``torch.randint(3, (2,),
requires_grad=False)`` and ``torch.hann_window(4, device="cpu")``. ``with_factory_options``
wraps a factory so it accepts the ones of ``layout``, ``pin_memory``, ``memory_format``,
``device`` and ``requires_grad`` it does not take itself, checks each value, and calls
the factory without them:

- ``layout``: ``None`` or ``strided`` (a sparse layout is NotImplementedError naming it;
  anything else TypeError, as torch);
- ``pin_memory``: false (True is the RuntimeError a CPU-only torch raises);
- ``memory_format``: ``None``, ``contiguous_format`` or ``preserve_format``;
- ``device``: a CPU device (``_device.check_device``);
- ``requires_grad``: set on the result (``requires_grad_``, which refuses integer dtypes
  as torch does).

Unknown keywords still reach the factory, which raises TypeError naming them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from ..core.device import check_device
from ..foundations.type_names import type_name
from .layouts import contiguous_format, layout, memory_format, preserve_format, strided

_OPTIONS = {
    "layout": None,
    "pin_memory": False,
    "memory_format": None,
    "device": None,
    "requires_grad": False,
}

# torch's factories and the options each takes (torch_signatures.json: the torch functions
# and Tensor.new_* methods with a ``layout`` or ``pin_memory`` keyword); a keyword torch
# does not take for a name stays an unknown keyword (TypeError) here too.
_DENSE = ("layout", "pin_memory", "device", "requires_grad")
_WITH_FORMAT = (*_DENSE, "memory_format")
FACTORIES = {
    **dict.fromkeys(
        ("arange", "bartlett_window", "blackman_window", "empty_strided", "eye", "full",
         "hamming_window", "hann_window", "kaiser_window", "linspace", "logspace", "normal",
         "ones", "rand", "randint", "randn", "randperm", "scalar_tensor", "tril_indices",
         "triu_indices", "zeros"),
        _DENSE,
    ),
    **dict.fromkeys(
        ("empty", "empty_like", "full_like", "ones_like", "rand_like", "randint_like",
         "randn_like", "zeros_like"),
        _WITH_FORMAT,
    ),
    "range": ("device", "requires_grad"),
    "tensor": ("pin_memory", "device", "requires_grad"),
}  # fmt: skip
TENSOR_FACTORIES = {
    **dict.fromkeys(
        ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros"), _DENSE
    ),
    "new_tensor": ("pin_memory", "device", "requires_grad"),
}


class _Signed:
    """The link between a wrapper and its function in the ``__wrapped__`` chain, carrying
    the wrapper's signature: ``inspect.signature`` stops here, ``inspect.unwrap`` goes on
    to the function. (A ``__signature__`` on the wrapper itself would be copied by
    ``functools.wraps`` onto wrappers that add parameters, such as ``_out.with_out``.)"""

    def __init__(self, fn: Callable, signature: inspect.Signature) -> None:
        self.__wrapped__ = fn
        self.__signature__ = signature

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)


def check_options(op: str, layout_=None, pin_memory=False, memory_format_=None) -> None:
    """Raise unless the options ask for a dense CPU tensor in C order."""
    if layout_ is not None and layout_ is not strided:
        if isinstance(layout_, layout):
            raise NotImplementedError(
                f"{op}(): layout={layout_!r} is not supported: tinyattn tensors are dense "
                "(layout=tinyattn.strided)"
            )
        raise TypeError(f"{op}(): argument 'layout' must be a layout, not {type_name(layout_)}")
    if pin_memory:
        raise RuntimeError(
            f"{op}(): pin_memory=True requires a CUDA or other accelerator backend; tinyattn "
            "runs on the CPU only"
        )
    if memory_format_ not in (None, contiguous_format, preserve_format):
        if isinstance(memory_format_, memory_format):
            raise NotImplementedError(
                f"{op}(): memory_format={memory_format_!r} is not supported: tinyattn "
                "factories make C-contiguous tensors"
            )
        raise TypeError(
            f"{op}(): argument 'memory_format' must be a memory_format, not "
            f"{type_name(memory_format_)}"
        )


def with_factory_options(fn: Callable, op: str, options: tuple[str, ...]) -> Callable:
    """``fn`` accepting those of torch's factory ``options`` it lacks (see the module
    docstring)."""
    sig = inspect.signature(fn)
    added = {name: _OPTIONS[name] for name in options if name not in sig.parameters}
    if not added:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        options = {name: kwargs.pop(name, default) for name, default in added.items()}
        check_options(op, options.get("layout"), options.get("pin_memory"),
                      options.get("memory_format"))  # fmt: skip
        check_device(options.get("device"))
        result = fn(*args, **kwargs)
        if options.get("requires_grad"):
            result.requires_grad_(True)
        return result

    params = list(sig.parameters.values())
    tail = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    head = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    extra = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d) for n, d in added.items()
    ]
    call.__wrapped__ = _Signed(fn, sig.replace(parameters=head + extra + tail))
    return call


def install(namespace: dict, tensor_class: type) -> None:
    """Wrap the factories in ``namespace`` (tinyattn's globals) and the ``Tensor.new_*``."""
    for name, options in FACTORIES.items():
        if name in namespace:
            namespace[name] = with_factory_options(namespace[name], name, options)
    for name, options in TENSOR_FACTORIES.items():
        method = with_factory_options(getattr(tensor_class, name), name, options)
        setattr(tensor_class, name, method)
