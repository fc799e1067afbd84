"""The README's attention example trains on the core alone: a subprocess imports only
``tinyattn.core``, builds ``softmax(Q K^T * scale) V`` from query/key/value projections,
checks the gradients against central finite differences in float64, takes a few plain SGD
steps and checks that the loss falls, and that no module outside the core was loaded."""

from __future__ import annotations

from core_alone import run_core_alone

ATTENTION = """
import sys
import numpy as np
import tinyattn.core as core
from tinyattn.core.tensor import Tensor, tensor

rng = np.random.default_rng(0)
tokens, width = 5, 4
x = tensor(rng.standard_normal((tokens, width)))  # the input sequence: a constant
target = tensor(rng.standard_normal((tokens, width)))
params = {
    name: tensor(rng.standard_normal((width, width)) * 0.5, requires_grad=True)
    for name in ("Wq", "Wk", "Wv")
}
scale = 1 / width**0.5


def loss_of(p):
    Q, K, V = x @ p["Wq"], x @ p["Wk"], x @ p["Wv"]
    P = (Q @ K.T * scale).softmax(dim=-1)  # attention weights, rows sum to 1
    O = P @ V
    return ((O - target) ** 2).sum() / O.size().numel()


loss = loss_of(params)
assert type(loss) is Tensor and loss.dtype.np_dtype == np.float64, (type(loss), loss.dtype)
assert loss.grad_fn.name() == "DivBackward0", loss.grad_fn.name()
loss.backward()

# gradients: central finite differences of the loss, every weight of every projection
eps = 1e-6
for name, w in params.items():
    numeric = np.zeros_like(w._data)
    for i in np.ndindex(w._data.shape):
        shifted = {k: tensor(v._data.copy()) for k, v in params.items()}
        values = []
        for sign in (1, -1):
            shifted[name]._data[i] = w._data[i] + sign * eps
            with core.no_grad():
                values.append(loss_of(shifted).item())
        numeric[i] = (values[0] - values[1]) / (2 * eps)
    assert np.allclose(w.grad._data, numeric, rtol=1e-5, atol=1e-8), (name, w.grad, numeric)

# plain SGD, written out: w -= lr * grad, then clear the grads
losses = [loss.item()]
for step in range(20):
    for w in params.values():
        w._data -= 0.5 * w.grad._data
        w.grad = None
    loss = loss_of(params)
    loss.backward()
    losses.append(loss.item())
assert losses[-1] < 0.8 * losses[0], losses
assert all(b <= a for a, b in zip(losses, losses[1:])), losses

loaded = sorted(m for m in sys.modules if m.startswith("tinyattn"))
assert all(m == "tinyattn" or m.startswith("tinyattn.core") for m in loaded), loaded
print("ok", round(losses[0], 4), round(losses[-1], 4))
"""


def test_the_attention_example_trains_on_the_core_alone():
    result = run_core_alone(ATTENTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok"), result.stdout


def test_a_wrong_gradient_would_be_caught():
    """The same script with the softmax backward replaced by a wrong one fails the
    finite-difference check: the check can fail."""
    broken = ATTENTION.replace(
        "rng = np.random.default_rng(0)",
        "core.primitives.Softmax.backward = staticmethod(lambda ctx, g: (g, None))\n"
        "rng = np.random.default_rng(0)",
    )
    result = run_core_alone(broken)
    assert result.returncode != 0 and "AssertionError" in result.stderr, result.stderr
