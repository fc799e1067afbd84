"""``tinyattn.compile``: accepted and an identity. There is no graph compiler.

tinyattn's hot loops (attention) are already numba-compiled on first use; everything
else runs op by op on NumPy. ``compile`` returns the model (or function) itself, so
``model = torch.compile(model)`` and ``@torch.compile`` leave code working and numbers
unchanged. One visible difference from torch: torch's compiled module is a wrapper whose
``state_dict`` keys start with ``_orig_mod.``; here the keys are the model's own.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["compile"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
    **kwargs,
):
    """Return ``model`` unchanged; with no model, a decorator that does the same.

    torch's arguments are accepted; ``mode`` is checked as torch checks it.
    """
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if model is None:
        return lambda fn: fn
    return model
