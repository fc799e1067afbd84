"""``tinyattn.distributed``: not available. tinyattn trains in one process on one CPU.

``import tinyattn.distributed as dist`` works, and so does the usual guard::

    if dist.is_available() and dist.is_initialized():   # False: the single-process path
        rank = dist.get_rank()

Everything that would need a process group raises, as torch does before
``init_process_group``: ``get_rank``, ``get_world_size``, ``barrier``, ``all_reduce``,
``broadcast`` ... raise ``ValueError`` (torch's type and first sentence), and
``init_process_group`` raises ``RuntimeError``. ``ReduceOp`` exists so that module-level
references like ``dist.ReduceOp.SUM`` import.

To train on several processes or machines, move the model to torch: tinyattn modules
have torch's parameter names, so ``state_dict`` s carry over in both directions
(``torch_module.load_state_dict({k: torch.from_numpy(v.numpy()) ...})`` and
``tinyattn_module.load_state_dict(torch_module.state_dict())``).
"""

from __future__ import annotations

import enum

__all__ = [
    "ReduceOp",
    "is_available",
    "is_initialized",
    "is_torchelastic_launched",
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "barrier",
    "all_reduce",
    "all_gather",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "reduce_scatter",
    "all_gather_object",
    "broadcast_object_list",
    "new_group",
]

MOVE_TO_TORCH = (
    "tinyattn has no distributed backend: it trains in a single process on the CPU. "
    "To train on several processes or machines, move to torch: tinyattn state_dicts load "
    "into torch modules and torch state_dicts load into tinyattn modules."
)
_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group. "
)


class ReduceOp(enum.Enum):
    """torch's reduction kinds (names only: there is nothing to reduce across)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    PREMUL_SUM = "premul_sum"


def is_available() -> bool:
    """False: this build of tinyattn (every build) has no distributed support."""
    return False


def is_initialized() -> bool:
    """False: there is never a process group."""
    return False


def is_torchelastic_launched() -> bool:
    """False, as torch outside ``torchrun``."""
    return False


def init_process_group(*args, **kwargs):
    """Raises RuntimeError: there is no backend to initialise."""
    raise RuntimeError(f"tinyattn.distributed.init_process_group: {MOVE_TO_TORCH}")


def _needs_group(name: str):
    def collective(*args, **kwargs):
        raise ValueError(f"{_NOT_INITIALIZED}(tinyattn.distributed.{name}: {MOVE_TO_TORCH})")

    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = f"Raises ValueError, as torch's ``{name}`` without a process group."
    return collective


destroy_process_group = _needs_group("destroy_process_group")
get_rank = _needs_group("get_rank")
get_world_size = _needs_group("get_world_size")
get_backend = _needs_group("get_backend")
barrier = _needs_group("barrier")
all_reduce = _needs_group("all_reduce")
all_gather = _needs_group("all_gather")
broadcast = _needs_group("broadcast")
reduce = _needs_group("reduce")
gather = _needs_group("gather")
scatter = _needs_group("scatter")
reduce_scatter = _needs_group("reduce_scatter")
all_gather_object = _needs_group("all_gather_object")
broadcast_object_list = _needs_group("broadcast_object_list")
new_group = _needs_group("new_group")
