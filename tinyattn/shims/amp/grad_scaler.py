"""``GradScaler``: loss scaling as torch's, disabled (with torch's warning) for CUDA.

Loss scaling exists for float16 training: small gradients underflow in float16, so
the loss is multiplied by ``scale`` before ``backward`` and the gradients divided by it
before the optimizer step. A step whose gradients hold inf/NaN is skipped and the scale
multiplied by ``backoff_factor``; after ``growth_interval`` clean steps it is multiplied
by ``growth_factor``.

In tinyattn (CPU, usually float32) scaling is rarely needed, but a ``device="cpu"``
scaler does exactly what torch's does, so a script gives the same parameters and scale
history. ``device="cuda"`` (torch's default) warns and disables itself, as in torch on a
machine without CUDA: then ``scale(x)`` is ``x``, ``step(opt)`` is ``opt.step()``, and
``update``/``unscale_`` do nothing.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor_api.tensor import Tensor

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling (``torch.amp.GradScaler``).

    Parameters
    ----------
    device : str
        ``"cuda"`` (default: disabled with a warning) or ``"cpu"`` (enabled).
    init_scale, growth_factor, backoff_factor, growth_interval
        torch's defaults: ``2**16``, ``2.0``, ``0.5``, ``2000``.
    enabled : bool

    Examples
    --------
    >>> import tinyattn as torch
    >>> scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    >>> w = torch.ones(2, requires_grad=True)
    >>> opt = torch.optim.SGD([w], lr=0.5)
    >>> scaler.scale((w * w).sum()).backward()   # gradients are 8x too large
    >>> scaler.step(opt)                         # unscales, then steps
    >>> scaler.update()
    >>> w.tolist(), scaler.get_scale()
    ([0.0, 0.0], 8.0)
    """

    _stacklevel = 2  # warnings point at the caller's line

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"GradScaler: device must be 'cpu' or 'cuda', got {device!r}")
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            warnings.warn(
                "GradScaler is enabled, but CUDA is not available.  Disabling.",
                UserWarning,
                stacklevel=self._stacklevel,
            )
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._scale: float | None = None
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def _state(self, optimizer) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def _require_scale(self, what: str) -> float:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {what} but _scale is None.  This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )
        return self._scale

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or tensors nested in lists/tuples)."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = self._init_scale

        def apply(value):
            if isinstance(value, Tensor):
                return value * self._scale
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place."""
        if not self._enabled:
            return
        scale = self._require_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0 / scale))  # torch: reciprocal in float64, then float32
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype.name == "float16":
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    p.grad.mul_(inv_scale)
                    found_inf = found_inf or not bool(np.isfinite(p.grad.numpy()).all())
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` on unscaled gradients, skipped if any is inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._require_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        scale = self._require_scale("update")
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        else:
            found_inf = [s["found_inf"] for s in self._per_optimizer.values()]
            if not found_inf:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found_inf):
                scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    scale *= self._growth_factor
                    self._growth_tracker = 0
            self._scale = float(np.float32(scale))  # torch keeps the scale in float32
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """torch's keys when enabled; ``{}`` when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
