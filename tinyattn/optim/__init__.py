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
Rprop, ASGD and LBFGS (closure-based). Schedulers live in ``optim.lr_scheduler``.

Updates follow torch's single-tensor (``foreach=False``) code path step for step,
so parameters match torch's to float32 rounding from the same starting point.
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

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
    "lr_scheduler",
]
