"""Module parity: load a torch module's state_dict into the tinyattn twin, compare everything."""

import numpy as np

import tinyattn

TOLS = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-6)}


def module_parity(
    torch_module, our_module, *inputs, dtype=np.float64, train=True, grad_inputs=None
):
    """Forward outputs, parameter grads and input grads of both modules must agree.

    ``inputs`` are NumPy arrays; floating ones are cast to ``dtype`` and require grad.
    """
    import torch

    tol = TOLS[dtype]
    if dtype == np.float64:
        torch_module, our_module = torch_module.double(), our_module.double()
    else:
        torch_module, our_module = torch_module.float(), our_module.float()
    our_module.zero_grad()
    torch_module.zero_grad()
    result = our_module.load_state_dict(torch_module.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    torch_module.train(train)
    our_module.train(train)
    ours, theirs = [], []
    for a in inputs:
        if a.dtype.kind == "f":
            a = a.astype(dtype)
            ours.append(tinyattn.tensor(a.copy(), requires_grad=True))
            theirs.append(torch.tensor(a.copy(), requires_grad=True))
        else:
            ours.append(tinyattn.tensor(a.copy()))
            theirs.append(torch.tensor(a.copy()))
    out_o, out_t = our_module(*ours), torch_module(*theirs)
    assert tuple(out_o.shape) == tuple(out_t.shape)
    assert out_o.dtype.name == str(out_t.dtype).replace("torch.", "")
    np.testing.assert_allclose(out_o.detach().numpy(), out_t.detach().numpy(), **tol)
    seed = np.random.default_rng(0).standard_normal(tuple(out_t.shape)).astype(dtype)
    (out_o * tinyattn.tensor(seed)).sum().backward()
    (out_t * torch.tensor(seed)).sum().backward()
    named_t = dict(torch_module.named_parameters())
    named_o = dict(our_module.named_parameters())
    assert list(named_o) == list(named_t)
    for name, p in named_t.items():
        assert (p.grad is None) == (named_o[name].grad is None), name
        if p.grad is not None:
            np.testing.assert_allclose(
                named_o[name].grad.numpy(), p.grad.numpy(), err_msg=name, **tol
            )
    for i, (xo, xt) in enumerate(zip(ours, theirs)):
        if xt.requires_grad:
            np.testing.assert_allclose(
                xo.grad.numpy(), xt.grad.numpy(), err_msg=f"input {i}", **tol
            )
    return out_o
