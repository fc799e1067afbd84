"""``tinyattn.amp``: torch's mixed-precision API on a CPU-only, full-precision library.

* :class:`autocast` is accepted everywhere torch accepts it and **casts nothing**: the
  code inside runs in its tensors' own dtypes. torch's CPU autocast would run matmuls in
  bfloat16 (or float16); tinyattn has no bfloat16 (NumPy has none) and does not
  implement per-op casting, so it warns and runs in full precision. Numbers therefore
  match torch *without* autocast, and are more precise than torch with it.
* :class:`GradScaler` behaves as torch's: for ``device="cuda"`` (the default) it warns
  that CUDA is not available and disables itself (``scale(loss)`` returns ``loss``,
  ``step(opt)`` calls ``opt.step()``); for ``device="cpu"`` it really scales the loss,
  unscales the gradients, skips steps with inf/NaN gradients and adapts the scale.
"""

from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
