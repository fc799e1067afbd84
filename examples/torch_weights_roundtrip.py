"""Move weights between torch and tinyattn, and through tinyattn checkpoint files.

tinyattn modules use torch's parameter names and shapes, so state dicts move both ways:

* torch -> tinyattn: ``ours.load_state_dict(torch_module.state_dict())`` (torch tensors
  are read as arrays);
* tinyattn -> torch: ``torch_module.load_state_dict({k: torch.from_numpy(v.numpy()) ...})``;
* files: ``tinyattn.save(module.state_dict(), path)`` / ``tinyattn.load(path)`` (a NumPy
  ``.npz`` archive with a JSON index: no pickle; ``torch.load`` cannot read it).

The torch part needs torch installed and is skipped with a message otherwise.

Run: python examples/torch_weights_roundtrip.py
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import tinyattn
from tinyattn import nn

EMBED_DIM, NUM_HEADS, SEQ, BATCH = 16, 4, 5, 3


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A (L, N, E) float32 input and a causal bool mask (True = blocked)."""
    x = np.random.default_rng(seed).standard_normal((SEQ, BATCH, EMBED_DIM)).astype(np.float32)
    return x, np.triu(np.ones((SEQ, SEQ), dtype=bool), k=1)


def run_tinyattn(module: nn.MultiheadAttention) -> tuple[np.ndarray, np.ndarray]:
    x, mask = _inputs()
    with tinyattn.no_grad():
        t = tinyattn.from_numpy(x)
        out, weights = module(t, t, t, attn_mask=tinyattn.from_numpy(mask))
    return out.numpy(), weights.numpy()


def file_roundtrip(module: nn.MultiheadAttention, directory: str) -> float:
    """Save the state dict, load it into a fresh module; return the max output difference."""
    path = os.path.join(directory, "mha.tinyattn")
    tinyattn.save(module.state_dict(), path)
    state = tinyattn.load(path)
    print(
        f"saved {len(state)} tensors to {os.path.basename(path)} "
        f"({os.path.getsize(path)} bytes): {sorted(state)}"
    )
    fresh = nn.MultiheadAttention(EMBED_DIM, NUM_HEADS)  # new random weights
    before = float(np.abs(run_tinyattn(fresh)[0] - run_tinyattn(module)[0]).max())
    print(f"a fresh module differs by {before:.3f} before loading")
    fresh.load_state_dict(state)
    diff = float(np.abs(run_tinyattn(fresh)[0] - run_tinyattn(module)[0]).max())
    print(f"file round trip: max |output difference| = {diff:.1e}")
    return diff


def torch_roundtrip(torch) -> dict:
    """torch weights -> tinyattn (compare outputs), then changed weights tinyattn -> torch."""

    def run_torch(module) -> tuple[np.ndarray, np.ndarray]:
        x, mask = _inputs()
        with torch.no_grad():
            t = torch.from_numpy(x)
            out, weights = module(t, t, t, attn_mask=torch.from_numpy(mask))
        return out.numpy(), weights.numpy()

    torch.manual_seed(0)
    torch_module = torch.nn.MultiheadAttention(EMBED_DIM, NUM_HEADS)
    ours = nn.MultiheadAttention(EMBED_DIM, NUM_HEADS)
    ours.load_state_dict(torch_module.state_dict())
    (out_t, w_t), (out_a, w_a) = run_torch(torch_module), run_tinyattn(ours)
    to_ours = float(max(np.abs(out_t - out_a).max(), np.abs(w_t - w_a).max()))
    print(f"torch -> tinyattn: max |difference| in output and weights = {to_ours:.1e}")

    # Change the tinyattn weights (one SGD step) so the way back carries something new.
    x, mask = _inputs(1)
    t = tinyattn.from_numpy(x)
    loss = ours(t, t, t, attn_mask=tinyattn.from_numpy(mask))[0].pow(2).mean()
    loss.backward()
    tinyattn.optim.SGD(ours.parameters(), lr=0.5).step()
    changed = float(np.abs(run_tinyattn(ours)[0] - out_t).max())

    torch_module.load_state_dict(
        {k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()}
    )
    (out_t2, w_t2), (out_a2, w_a2) = run_torch(torch_module), run_tinyattn(ours)
    to_torch = float(max(np.abs(out_t2 - out_a2).max(), np.abs(w_t2 - w_a2).max()))
    print(
        f"after one tinyattn SGD step the output moved by {changed:.3f}; "
        f"tinyattn -> torch: max |difference| = {to_torch:.1e}"
    )
    return {"torch_to_tinyattn": to_ours, "tinyattn_to_torch": to_torch, "changed": changed}


def main() -> dict:
    tinyattn.manual_seed(0)
    module = nn.MultiheadAttention(EMBED_DIM, NUM_HEADS)
    with tempfile.TemporaryDirectory() as directory:
        result = {"file": file_roundtrip(module, directory)}
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the torch <-> tinyattn part")
        result["torch"] = None
        return result
    result["torch"] = torch_roundtrip(torch)
    return result


if __name__ == "__main__":
    main()
