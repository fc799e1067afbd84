"""``tinyattn.nn.parallel``: the one-device cases of torch's data-parallel wrappers.

* :class:`DataParallel` wraps a module exactly as torch's does on a machine without
  GPUs: it runs the module in the calling process and prefixes the state-dict keys
  with ``module.``, so checkpoints match torch's ``DataParallel`` ones.
* :class:`DistributedDataParallel` (``DDP``) is importable, so training scripts import,
  and raises when constructed: tinyattn has no process groups.
"""

from __future__ import annotations

from ...shims.distributed import MOVE_TO_TORCH
from ..modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """``module`` run on the CPU, in this process (torch's behaviour with no GPU).

    Parameters
    ----------
    module : Module
    device_ids, output_device, dim
        Accepted and unused (there is one device).
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """``self.module(*inputs, **kwargs)`` (one device: no scatter or gather).

        The gradient is the wrapped module's: ``d inputs = J_module^T g``.

        Composes: nn.Module.__call__
        """
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Raises RuntimeError when constructed: there is no distributed backend."""

    def __init__(self, module: Module, *args, **kwargs) -> None:
        raise RuntimeError(f"DistributedDataParallel: {MOVE_TO_TORCH}")
