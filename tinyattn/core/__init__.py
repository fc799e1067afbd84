"""The core of tinyattn: a tensor that records the ops applied to it, the graph it
records, and the engine that runs that graph backward. It imports nothing from the rest
of the package and runs on its own: ``tests/core/test_core_trains_attention.py`` trains
the README's attention example with this folder alone.

Reading order (an afternoon):

1. ``tensor.py``: ``Tensor``, the tensor a learner uses (``tensor([[1.0, 2.0]],
   requires_grad=True)``, ``@``, ``+``, ``.sum()``, ``.softmax(dim)``, ``.backward()``);
   each method calls one primitive op.
2. ``primitives.py``: the 14 primitive ops (add, mul, div, pow, exp, log, sum, max,
   reshape, permute, expand, getitem, matmul, softmax), each a ``Function`` with its
   forward and backward side by side and the formula in its docstring.
3. ``function.py``: ``Function.apply`` (run forward on arrays, record a ``Node``), and the
   ``Node``: what forward saved, the version check, release after backward.
4. ``engine.py``: the backward loop (a topological walk over the nodes, unbroadcasting and
   summing gradients into each input, ``.grad`` of the leaves), and its one seam,
   ``extensions.py``, where hooks, anomaly mode and saved-tensor hooks plug in.
5. ``tensor_base.py``: the autograd fields every tensor has (the array, ``grad_fn``,
   ``.grad``, the version counter) and ``TensorBase._make``, how ops make their results.

The small pieces they use: ``grad_mode.py`` (``no_grad``), ``quiet.py`` (NumPy's
floating-point warnings), ``padded.py``, ``xp.py`` (the NumPy namespace backward formulas
compute with) and ``_dtype.py``; ``device.py`` and ``size.py`` hold the ``device`` and
``Size`` types a tensor reports.

The rest of the package builds on this: ``tinyattn.ops`` subclasses the primitives to add
torch's rules (dtype promotion, ``alpha=``, every dim form, the BLAS and numba kernels)
around the same backward, and ``tinyattn.Tensor`` subclasses ``Tensor`` with torch's full
surface. With the full package imported, op results are ``tinyattn.Tensor`` objects.
"""

from __future__ import annotations

from . import _dtype, engine, extensions, function, grad_mode, primitives, tensor, tensor_base
from .engine import run_backward, unbroadcast
from .extensions import Extensions
from .function import AccumulateGrad, Function, Node
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .tensor import Tensor
from .tensor_base import TensorBase

__all__ = [
    "AccumulateGrad",
    "Extensions",
    "Function",
    "Node",
    "Tensor",
    "TensorBase",
    "enable_grad",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "unbroadcast",
    "engine",
    "extensions",
    "function",
    "grad_mode",
    "primitives",
    "tensor",
    "tensor_base",
]
