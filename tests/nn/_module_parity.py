"""Module parity against torch: same state_dict, same inputs -> same outputs and gradients."""

from __future__ import annotations

import numpy as np

import tinyattn

try:
    import torch
except ImportError:  # module_parity skips its test; the file's gradchecks still run
    torch = None

TOL = {np.float64: dict(atol=1e-10, rtol=1e-10), np.float32: dict(atol=1e-5, rtol=1e-5)}


def _convert(lib, value, dtype, requires_grad):
    if isinstance(value, np.ndarray):
        arr = value.astype(dtype) if value.dtype.kind == "f" else value
        t = lib.tensor(arr.copy())
        if requires_grad and arr.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(value, tuple):
        return tuple(_convert(lib, v, dtype, requires_grad) for v in value)
    return value


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _leaves(values):
    return [x for x in _flat(values) if hasattr(x, "requires_grad") and x.requires_grad]


def module_parity(
    torch_module,
    tiny_module,
    *args,
    dtype=np.float64,
    train=True,
    grad=True,
    seed=0,
    **kwargs,
):
    """Load torch's state_dict into the twin, run both, compare outputs and all gradients.

    ``args``/``kwargs``: numpy arrays (floating ones require grad when ``grad``), tuples of
    arrays (state tuples) or plain values. Returns the tinyattn outputs (flattened).
    """
    tiny_module.load_state_dict(torch_module.state_dict())
    if dtype == np.float64:
        torch_module.double()
        tiny_module.double()
    else:
        torch_module.float()
        tiny_module.float()
    torch_module.train(train)
    tiny_module.train(train)
    ours_args = [_convert(tinyattn, a, dtype, grad) for a in args]
    theirs_args = [_convert(torch, a, dtype, grad) for a in args]
    ours_kw = {k: _convert(tinyattn, v, dtype, False) for k, v in kwargs.items()}
    theirs_kw = {k: _convert(torch, v, dtype, False) for k, v in kwargs.items()}
    out_o = _flat(tiny_module(*ours_args, **ours_kw))
    out_t = _flat(torch_module(*theirs_args, **theirs_kw))
    tol = TOL[dtype]
    assert len(out_o) == len(out_t)
    for o, t in zip(out_o, out_t):
        assert (o is None) == (t is None)
        if t is not None:
            assert tuple(o.shape) == tuple(t.shape), (o.shape, t.shape)
            assert o.dtype.name == str(t.dtype).replace("torch.", "")
            np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **tol)
    pairs = [(o, t) for o, t in zip(out_o, out_t) if t is not None and t.requires_grad]
    if not pairs:
        return out_o
    rng = np.random.default_rng(seed)
    seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for _, t in pairs]
    sum((o * tinyattn.tensor(s)).sum() for (o, _), s in zip(pairs, seeds)).backward()
    sum((t * torch.tensor(s)).sum() for (_, t), s in zip(pairs, seeds)).backward()
    grad_tol = {k: v * 10 for k, v in tol.items()}
    for i, (xo, xt) in enumerate(zip(_leaves(ours_args), _leaves(theirs_args))):
        assert xt.grad is not None and xo.grad is not None, f"input {i}: missing grad"
        np.testing.assert_allclose(
            xo.grad.numpy(), xt.grad.numpy(), err_msg=f"grad of input {i}", **grad_tol
        )
    params_o = dict(tiny_module.named_parameters())
    params_t = dict(torch_module.named_parameters())
    assert list(params_o) == list(params_t)
    for name, pt in params_t.items():
        po = params_o[name]
        if pt.grad is None:
            assert po.grad is None or not po.grad.numpy().any(), f"{name}: torch has no grad"
            continue
        assert po.grad is not None, f"{name}: no gradient"
        np.testing.assert_allclose(
            po.grad.numpy(), pt.grad.numpy(), err_msg=f"grad of {name}", **grad_tol
        )
    return out_o
