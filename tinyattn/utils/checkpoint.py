"""Activation checkpointing: trade compute for memory by recomputing a block in backward.

``checkpoint(fn, *args)`` runs ``fn`` under ``no_grad``, so none of its
intermediate activations are kept: the graph gets one :class:`Checkpoint` node
per output tensor that saves only the inputs. When backward reaches that node it

1. rebuilds the inputs as fresh leaves (same arrays, same ``requires_grad``),
2. restores the random state of the forward (so dropout draws the same mask),
3. re-runs ``fn`` with grad enabled, and
4. backpropagates the incoming gradient through the recomputed graph.

Step 4 is an ordinary ``backward`` on the recomputed output: tensors ``fn`` uses
from its closure (a layer's weights) receive ``.grad`` as usual, and the
gradients of the fresh input leaves are what the node returns to the outer graph.

Memory: peak activation memory drops from "everything inside ``fn``" to "the
inputs of ``fn``" plus one block's activations during its backward.

Differences from torch
----------------------
* ``use_reentrant`` is accepted (True, False or None) and both modes run the
  scheme above (torch's reentrant flavour).
* Closure tensors get their gradient accumulated into ``.grad`` even under
  ``autograd.grad(...)`` (which torch's reentrant mode does not support at all).
* Closure tensors should be leaves (parameters) or detached; a non-leaf closure
  tensor's own graph is backpropagated from inside this node.
* A function with several output tensors is recomputed once per backward; its
  recomputed graph is shared by the outputs' nodes.
* ``create_graph=True`` (higher-order gradients) works in both modes, with the
  results of torch's non-reentrant mode (torch's reentrant mode returns gradients
  without a graph, or refuses ``autograd.grad``). The block is then recomputed
  from the inputs *in the outer graph* (through a ``clone`` each, cut from that
  graph while the block's own backward runs), so the gradients it returns can be
  differentiated again with respect to the inputs and the closure tensors.

Examples
--------
>>> import tinyattn as torch
>>> from tinyattn.utils.checkpoint import checkpoint
>>> w = torch.randn(4, 4, requires_grad=True)
>>> x = torch.randn(2, 4, requires_grad=True)
>>> def block(h):
...     return (h @ w).tanh() @ w
>>> y = checkpoint(block, x, use_reentrant=False)
>>> y.grad_fn
<CheckpointBackward0>
>>> y.sum().backward()  # recomputes block, fills x.grad and w.grad
>>> x.grad.shape, w.grad.shape
(tinyattn.Size([2, 4]), tinyattn.Size([4, 4]))
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import random as _random
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.xp import tensor_xp
from ..core.function import Function
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor

__all__ = ["checkpoint", "Checkpoint"]


class _Block:
    """What the output nodes of one ``checkpoint`` call share: fn, args, RNG state, recompute."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng_state) -> None:
        self.fn = fn
        self.args = args  # non-tensor arguments are reused as is; tensors come from ctx
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.outputs: list = []
        self.recomputed: tuple | None = None  # (outputs, input leaves) during one backward
        self.pending = 0

    def recompute(self, saved: tuple, needs_grad: tuple, graph: bool) -> tuple:
        """fn run again with grad enabled on fresh inputs: leaves made from the saved arrays,
        or (``graph``: create_graph) clones of the saved inputs, which are outer-graph Tensors."""
        if self.recomputed is not None:
            return self.recomputed
        leaves = []
        args = []
        for i, (arr, need) in enumerate(zip(saved, needs_grad)):
            if i >= len(self.args):  # the dummy input added by checkpoint(): not fn's
                leaves.append(None)
                continue
            a = self.args[i]
            if isinstance(a, Tensor):
                if graph:
                    with enable_grad():
                        leaf = arr.clone()
                else:
                    leaf = Tensor._make(arr)
                    leaf._requires_grad = bool(need)
                leaves.append(leaf)
                args.append(leaf)
            else:
                leaves.append(None)
                args.append(a)
        current = _random.get_rng_state() if self.rng_state is not None else None
        try:
            if self.rng_state is not None:
                _random.set_rng_state(self.rng_state)
            with enable_grad():
                outputs = _as_tuple(self.fn(*args, **self.kwargs))
        finally:
            if current is not None:
                _random.set_rng_state(current)
        self.recomputed = (outputs, leaves)
        return self.recomputed


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


class Checkpoint(Function):
    """One output of a checkpointed block; backward recomputes the block.

    forward:  y_i = fn(*inputs)[i], computed once under no_grad by ``checkpoint``;
              only the inputs are saved.
    backward: recompute fn(*inputs) with grad enabled from fresh input leaves,
              run backward(y_i, dy_i) through it, return the leaves' gradients
              (``None`` for inputs that are not tensors or need no gradient).
              Under create_graph the same, recorded (see the module docstring).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, *arrays, block: _Block, index: int):
        ctx.save_for_backward(*arrays)
        ctx.block = block
        ctx.index = index
        return block.outputs[index]._data

    @staticmethod
    def backward(ctx, grad_output):
        from ..autograd import backward as run_backward

        block: _Block = ctx.block
        graph = ctx.xp is tensor_xp
        inputs = ctx.saved_tensors  # raises if an input was modified in place since forward
        outputs, leaves = block.recompute(inputs, ctx.needs_input_grad, graph)
        out = outputs[ctx.index]
        if graph:
            grads = _graph_vjp(out, grad_output, leaves)
        else:
            if isinstance(out, Tensor) and out.requires_grad:
                run_backward(out, Tensor._make(grad_output), retain_graph=True)
            grads = []
            for leaf in leaves:
                if leaf is None or leaf.grad is None:
                    grads.append(None)
                else:
                    grads.append(leaf.grad._data)
                    leaf.grad = None  # the next output's node reports only its own part
        block.pending -= 1
        if block.pending == 0:  # every output's gradient is in: free the recomputed graph
            block.recomputed = None
            block.pending = len(block.outputs)
        return tuple(grads)


def _graph_vjp(out, grad_output, leaves) -> list:
    """The inputs' gradients of ``out`` for ``grad_output``, recorded (create_graph).

    The recomputation's inputs are clones of the outer graph's inputs; their nodes are
    cut from the outer graph while this backward runs (the outer engine passes the
    returned gradients on) and reconnected after, so that the recorded gradients lead
    back to the inputs. Closure leaves get their ``.grad`` (with its graph) as in torch.
    """
    from ..core.engine import run_backward

    clones = [leaf.grad_fn if leaf is not None else None for leaf in leaves]
    cut = [(node, node.next_nodes) for node in clones if node is not None]
    if not (isinstance(out, Tensor) and out.requires_grad):
        return [None] * len(leaves)
    for node, _ in cut:
        node.next_nodes = (None,) * len(node.next_nodes)
    try:
        captured = run_backward(
            [out.grad_fn if out.grad_fn is not None else out._grad_node()],
            [grad_output],
            retain_graph=True,
            capture=dict.fromkeys(node for node, _ in cut),
            create_graph=True,
        )
    finally:
        for node, next_nodes in cut:
            node.next_nodes = next_nodes
    return [captured.get(node) if node is not None else None for node in clones]


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    **kwargs: Any,
):
    """Run ``function(*args, **kwargs)`` without storing its activations; recompute in backward.

    Parameters
    ----------
    function : callable
        The block to checkpoint; it returns a Tensor or a tuple/list of values.
    *args
        Its positional arguments. Tensors among them get gradients; anything
        else is passed through unchanged.
    use_reentrant : bool or None
        Accepted for torch compatibility (torch >= 2.4 asks for it explicitly);
        both values use the same implementation (see the module docstring).
    preserve_rng_state : bool, default True
        Replay the forward's random state during recomputation, so random ops
        (dropout) draw the same numbers.
    **kwargs
        Keyword arguments for ``function`` (context_fn, determinism_check, debug
        and early_stop are torch options and are accepted and ignored).

    Returns
    -------
    Whatever ``function`` returns: tensor outputs are attached to the graph
    through :class:`Checkpoint` nodes, other values are returned as they are.
    """
    if use_reentrant not in (None, True, False):
        raise ValueError(f"checkpoint: use_reentrant must be a bool or None, got {use_reentrant!r}")
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type_name(function)}")
    for option in ("context_fn", "determinism_check", "debug", "early_stop"):
        kwargs.pop(option, None)
    if not is_grad_enabled():
        return function(*args, **kwargs)

    rng_state = _random.get_rng_state() if preserve_rng_state else None
    block = _Block(function, args, kwargs, rng_state)
    with no_grad():
        result = function(*args, **kwargs)
    outputs = _as_tuple(result)
    block.outputs = list(outputs)

    node_args = list(args)
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        # Closure tensors (weights) may still need gradients: a dummy input that
        # requires grad makes the nodes record (its own gradient stays None).
        node_args.append(Tensor._make(np.zeros(())).requires_grad_(True))

    wrapped = []
    for i, out in enumerate(outputs):
        if isinstance(out, Tensor) and out.is_floating_point():
            wrapped.append(Checkpoint.apply(*node_args, block=block, index=i))
            block.pending += 1
        else:
            wrapped.append(out)
    if isinstance(result, (tuple, list)):
        return type(result)(wrapped)
    return wrapped[0]


def get_device_states(*args: Any) -> tuple[list[int], list]:
    """The accelerator devices the tensors in ``args`` are on, and their random states.

    tinyattn's tensors are all on the CPU, whose random state ``checkpoint`` keeps itself,
    so both lists are empty (as torch's are for CPU tensors)."""
    return [], []


def set_device_states(devices: list, states: list, *, device_type: str | None = None) -> None:
    """Restore accelerator random states saved by :func:`get_device_states` (none on a CPU)."""
    if len(devices) != len(states):
        raise ValueError(
            f"set_device_states: devices and states must have the same length, got "
            f"{len(devices)} and {len(states)}"
        )
    if devices:
        raise RuntimeError(
            f"set_device_states: devices must be empty (tinyattn runs on the CPU only), got {devices!r}"
        )


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of ``inputs`` detached, keeping its ``requires_grad``; others unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type_name(inputs)}"
        )
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            y = x.detach()
            y.requires_grad = x.requires_grad
            out.append(y)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Any) -> None:
    """Warn when no tensor of ``inputs`` requires grad (a checkpoint would get no gradient)."""
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


def noop_context_fn() -> tuple[
    contextlib.AbstractContextManager, contextlib.AbstractContextManager
]:
    """The default ``context_fn`` of ``checkpoint``: two contexts that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint_sequential(
    functions: Any, segments: int, input: Any, use_reentrant: bool | None = None, **kwargs: Any
):
    """Run ``functions`` (a Sequential or a list of modules/functions) on ``input`` in
    ``segments`` chunks, each but the last through :func:`checkpoint`."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(
            f"checkpoint_sequential: segments must be a positive int, got {segments!r}"
        )
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise TypeError(f"checkpoint_sequential: unexpected keyword arguments {sorted(kwargs)}")
    size = max(len(fns) // segments, 1)

    def run(start: int, end: int) -> Callable:
        def forward(x):
            for f in fns[start : end + 1]:
                x = f(x)
            return x

        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run(end + 1, len(fns) - 1)(input)


class CheckpointError(RuntimeError):
    """torch's error for a recomputation that differs from the forward (tinyattn raises
    no such error: it replays the forward's random state and recomputes in full)."""


class DefaultDeviceType:
    """The device type whose random state ``checkpoint`` saves besides the CPU's."""

    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the device type (recorded; tinyattn has no accelerator state to save)."""
        if not isinstance(device, str):
            raise TypeError(f"set_device_type: device must be a str, got {type_name(device)}")
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The device type last set (``"cuda"`` by default, as in torch)."""
        return DefaultDeviceType._default_device_type


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """torch's switch for stopping a recomputation once the needed tensors exist; tinyattn
    always recomputes the whole block, so results are the same either way."""
    if not isinstance(enable, bool):
        raise TypeError(
            f"set_checkpoint_early_stop: enable must be a bool, got {type_name(enable)}"
        )
    yield


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """torch's switch for tracing recomputations in its error messages; nothing to trace here."""
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(
            f"set_checkpoint_debug_enabled: enabled must be a bool or None, got {type_name(enabled)}"
        )
    yield
