"""``tinyattn.nn.attention``: torch's attention helpers.

* :mod:`tinyattn.nn.attention.flex_attention`: ``flex_attention`` with ``score_mod`` /
  ``create_block_mask`` (attention variants written as small Python functions).
* ``SDPBackend`` and ``sdpa_kernel``: torch's way to choose among its SDPA kernels.
  On tinyattn ``FLASH_ATTENTION`` is the fused numba kernels and ``MATH`` the
  stored-weights NumPy path (``nn.functional.scaled_dot_product_attention`` says when
  each runs); the other backends are CUDA kernels, accepted and never run. Within the
  block only the given backends are enabled in ``tinyattn.backends.cuda``'s switches
  (restored afterwards), as in torch; with none of flash / math enabled, or with only
  flash and inputs it cannot take, SDPA raises torch's RuntimeError.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from ...kernels.sdp_switches import SDPBackend, sdp_backends_enabled
from ...foundations.type_names import type_name

__all__ = ["SDPBackend", "sdpa_kernel", "flex_attention"]


@contextlib.contextmanager
def sdpa_kernel(
    backends: SDPBackend | Iterable[SDPBackend], set_priority: bool = False
) -> Iterator[dict]:
    """Within the block, only ``backends`` are enabled for scaled_dot_product_attention.

    backends : one ``SDPBackend`` or a list of them.
    set_priority : if True, the list's order is the order the enabled backends are tried
        in (e.g. ``[MATH, FLASH_ATTENTION]`` prefers the math path).

    >>> import tinyattn as torch
    >>> from tinyattn.nn.attention import SDPBackend, sdpa_kernel
    >>> q = torch.ones(1, 2, 4, 8)
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     out = torch.nn.functional.scaled_dot_product_attention(q, q, q)
    >>> tuple(out.shape)
    (1, 2, 4, 8)
    """
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for backend in chosen:
        if not isinstance(backend, SDPBackend):
            raise TypeError(
                "sdpa_kernel(): argument 'backends' must be an SDPBackend or a list of them, "
                f"got an element of type {type_name(backend)}"
            )
    with sdp_backends_enabled(list(dict.fromkeys(chosen)), set_priority) as state:
        yield state


def __getattr__(name: str):
    if name == "flex_attention":  # the submodule, imported on first use (as torch's)
        import importlib

        return importlib.import_module(f"{__name__}.flex_attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
