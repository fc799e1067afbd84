"""Train an attention classifier with a gradient penalty: a second-order term, beside torch.

The loss has a term that is itself a gradient (input-gradient regularisation):

    L = CE(model(x), y) + lam * mean_b || dCE/dx_b ||^2

Its gradient with respect to the weights differentiates ``dCE/dx``, so the first
gradient is taken with ``autograd.grad(..., create_graph=True)``: the backward pass
is recorded as a graph of its own, and ``L.backward()`` runs through it.

The model is ``nn.MultiheadAttention`` over a short sequence, mean-pooled, then a
linear classifier. tinyattn and (when installed) torch start from the same weights
and data and take the same SGD steps in float64; the script prints both losses per
step and the largest parameter difference at the end.

    python examples/gradient_penalty_attention.py
"""

from __future__ import annotations

import numpy as np

import tinyattn

STEPS, LAM, LR = 12, 0.5, 0.2
BATCH, LENGTH, DIM, HEADS, CLASSES = 8, 5, 8, 2, 2


def make_model(lib, seed: int = 0):
    """Attention, mean over positions, linear head (float64)."""

    class Classifier(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = lib.nn.MultiheadAttention(DIM, HEADS, batch_first=True)
            self.head = lib.nn.Linear(DIM, CLASSES)

        def forward(self, x):
            context, _ = self.attention(x, x, x, need_weights=False)
            return self.head(context.mean(dim=1))

    lib.manual_seed(seed)
    return Classifier().double()


def make_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, LENGTH, DIM))
    y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int64)
    return x, y


def penalised_loss(lib, model, x, y):
    """``CE + lam * mean ||dCE/dx||^2``; returns (total, cross-entropy, penalty)."""
    x = lib.tensor(x, requires_grad=True)
    ce = lib.nn.functional.cross_entropy(model(x), lib.tensor(y))
    (grad_x,) = lib.autograd.grad(ce, x, create_graph=True)  # a graph of the backward
    penalty = (grad_x**2).sum(dim=(1, 2)).mean()
    return ce + LAM * penalty, ce, penalty


def train(lib, model, x, y) -> list[float]:
    optimizer = lib.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        loss, _, _ = penalised_loss(lib, model, x, y)
        optimizer.zero_grad()
        loss.backward()  # through the recorded backward: second derivatives
        optimizer.step()
        losses.append(loss.item())
    return losses


def torch_twin(model):
    """The same model in torch, with tinyattn's initial weights; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    twin = make_model(torch)
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}
    twin.load_state_dict(state)
    return twin


def main() -> dict:
    x, y = make_data()
    model = make_model(tinyattn)
    twin = torch_twin(model)
    ours = train(tinyattn, model, x, y)
    if twin is None:
        print("torch not installed: tinyattn alone")
        theirs = [float("nan")] * STEPS
    else:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        # torch's fused CPU attention has no double backward: its math path has.
        with sdpa_kernel(SDPBackend.MATH):
            theirs = train(torch, twin, x, y)
    print("step  tinyattn loss   torch loss")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        print(f"{i + 1:4d}  {a:13.10f}  {b:11.10f}")
    result = {"losses": ours, "torch_losses": None, "max_param_diff": None}
    if twin is not None:
        theirs_state = twin.state_dict()
        diff = max(
            float(np.abs(v.numpy() - theirs_state[k].detach().numpy()).max())
            for k, v in model.state_dict().items()
        )
        print(f"largest parameter difference after {STEPS} steps: {diff:.2e}")
        result.update(torch_losses=theirs, max_param_diff=diff)
    return result


if __name__ == "__main__":
    main()
