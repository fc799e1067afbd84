"""Optimizers and learning-rate schedulers (``torch.optim``).

>>> import tinyattn as torch
>>> w = torch.randn(3, requires_grad=True)
>>> opt = torch.optim.AdamW([w], lr=1e-2)
>>> sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
...     sched.step()

Optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam,
Rprop, ASGD, LBFGS (closure-based), Adafactor, Muon (2-D parameters) and SparseAdam
(constructible; its step refuses dense gradients, as torch's, and tinyattn has no
sparse ones). Schedulers live in ``optim.lr_scheduler``; weight averaging (SWA, EMA)
in ``optim.swa_utils``.

Updates follow torch's single-tensor (``foreach=False``) code path step for step,
so parameters match torch's to float32 rounding from the same starting point.
"""

from . import lr_scheduler
from .adafactor import Adafactor
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "Rprop",
    "ASGD",
    "LBFGS",
    "Adafactor",
    "Muon",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
]


def __getattr__(name: str):
    # ``swa_utils`` needs ``tinyattn.nn`` (AveragedModel is a Module): loaded on first use,
    # so ``import tinyattn.optim`` stays free of nn
    if name == "swa_utils":
        import importlib

        return importlib.import_module(f"{__name__}.swa_utils")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"swa_utils"})
