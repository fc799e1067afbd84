"""torch's global switches and small queries: determinism, anomaly mode, inference mode,
warn-always, the default tensor type, inter-op threads, ``typename``.

Where tinyattn has nothing to switch (its kernels are deterministic, it keeps no storages,
it has no inter-op thread pool), the switch records its value so the matching query
returns it, and the docstring says what it does here.
"""

from __future__ import annotations

import builtins
import functools
import os
import threading
import warnings
from typing import Any

from ..autograd import anomaly_mode as _anomaly_mode
from ..autograd import grad_mode as _grad_mode
from ..foundations.type_names import type_name
from ..kernels.matmul import linear_threads


class _Switches:
    deterministic = False
    deterministic_warn_only = False
    warn_always = False
    interop_threads: int | None = None


_switches = _Switches()


# -- determinism -----------------------------------------------------------------------------
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms only (``warn_only``: warn instead of raising).

    tinyattn's kernels are deterministic already (they write disjoint outputs, with no
    atomic accumulation). What the mode changes: linear products stop choosing their BLAS
    thread count by timing (``kernels.matmul.BlasThreadChoice``), since a one-row product
    by a wide matrix may round its last bits differently at another count; the queries
    below report the setting.
    """
    if not isinstance(mode, bool):
        raise TypeError(
            f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type_name(mode)}"
        )
    if not isinstance(warn_only, bool):
        raise TypeError(
            f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
            f"{type_name(warn_only)}"
        )
    _switches.deterministic = mode
    _switches.deterministic_warn_only = warn_only
    linear_threads.fixed = mode


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _switches.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(..., warn_only=True)`` is in effect."""
    return _switches.deterministic_warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """0 / ``'default'``: off; 1 / ``'warn'``: on, warn only; 2 / ``'error'``: on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type_name(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (on), from the current determinism setting."""
    if not _switches.deterministic:
        return 0
    return 1 if _switches.deterministic_warn_only else 2


# -- anomaly mode ----------------------------------------------------------------------------
def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn autograd's anomaly mode on or off (``check_nan``: also raise on NaN gradients).

    The same switch as ``tinyattn.autograd.set_detect_anomaly`` (``autograd/anomaly_mode.py``):
    ops keep their forward stack, and backward checks every node's gradients.
    """
    _anomaly_mode._set(enabled, check_nan)


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on (``detect_anomaly`` or ``set_anomaly_enabled(True)``)."""
    return _anomaly_mode.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks gradients for NaN (True when it is off, as torch)."""
    return _anomaly_mode.is_anomaly_check_nan_enabled()


# -- inference mode --------------------------------------------------------------------------
class _InferenceState(threading.local):
    enabled = False


_inference = _InferenceState()


class inference_mode(_grad_mode.inference_mode):
    """``no_grad`` that ``is_inference_mode_enabled()`` can see (context manager/decorator).

    ``inference_mode(False)`` leaves grad mode on and inference mode off. tinyattn makes
    no separate inference tensors: the tensors made inside are ordinary ones.
    """

    def __new__(cls, mode=True):
        if callable(mode):  # the bare decorator ``@inference_mode``, as torch allows
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__(mode)
        self.inference = bool(mode)

    def __enter__(self) -> None:
        super().__enter__()
        self.prev_inference = _inference.enabled
        _inference.enabled = self.inference

    def __exit__(self, *exc) -> None:
        _inference.enabled = self.prev_inference
        super().__exit__(*exc)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(self.inference):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether the calling thread is inside ``inference_mode()``."""
    return _inference.enabled


# -- warnings, threads, numerics -------------------------------------------------------------
def set_warn_always(b: bool, /) -> None:
    """Ask for warnings torch gives once per process to be given every time (recorded)."""
    _switches.warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """The value of the last ``set_warn_always``."""
    return _switches.warn_always


def set_flush_denormal(mode: bool) -> bool:
    """Returns False: NumPy offers no switch for the CPU's flush-to-zero mode, so denormal
    numbers are kept (torch returns False too where it cannot set the mode)."""
    return False


def get_num_interop_threads() -> int:
    """Threads for running independent ops at once: tinyattn runs ops one after another,
    so this is only the value set (default: the machine's core count, as torch's)."""
    if _switches.interop_threads is None:
        return os.cpu_count() or 1
    return _switches.interop_threads


def set_num_interop_threads(int: int) -> None:  # torch names the parameter "int"
    """Record the inter-op thread count (a positive int, set at most once, as torch)."""
    n = int
    if not isinstance(n, builtins.int) or isinstance(n, bool):
        raise TypeError(f"set_num_interop_threads(): expected an int, got {type_name(n)}")
    if n <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {n}")
    if _switches.interop_threads is not None:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started "
            "or set_num_interop_threads called"
        )
    _switches.interop_threads = n


# -- default tensor type ---------------------------------------------------------------------
_FLOAT_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16"}


def set_default_tensor_type(t, /) -> None:
    """Deprecated (as in torch): ``set_default_dtype`` of a floating legacy tensor type.

    ``t`` is ``tinyattn.FloatTensor`` / ``DoubleTensor`` / ``HalfTensor`` or its name
    (``'torch.DoubleTensor'`` or ``'tinyattn.DoubleTensor'``); other types raise TypeError.
    """
    from ..core import _dtype

    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if isinstance(t, str):
        prefix, _, name = t.rpartition(".")
        if prefix not in ("torch", "tinyattn") or not name.endswith("Tensor"):
            raise ValueError(f"invalid type: '{t}'")
    elif callable(t) and getattr(t, "__name__", "").endswith("Tensor"):
        name = t.__name__
    else:
        raise TypeError(
            "invalid type object: only floating-point types are supported as the default type"
        )
    if name not in _FLOAT_TYPES:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(_dtype.to_dtype(_FLOAT_TYPES[name]))


# -- names -----------------------------------------------------------------------------------
def typename(obj: Any, /) -> str:
    """A readable type name: ``t.type()`` for a tensor (``'torch.FloatTensor'``, as torch),
    else ``module.qualname`` of a class or function (just the name for builtins) or of
    an object's class."""
    from ..core.tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    if isinstance(obj, type) or hasattr(obj, "__qualname__"):
        module, name = getattr(obj, "__module__", "") or "", obj.__qualname__
    else:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_storage(obj: Any, /) -> bool:
    """False: tinyattn tensors own NumPy arrays, there are no storage objects."""
    return False


def compiled_with_cxx11_abi() -> bool:
    """True, torch's answer for its builds: tinyattn compiles no C++ (numba emits LLVM),
    so there is no ABI to mismatch; programs ask this before building extensions."""
    return True
