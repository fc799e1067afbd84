"""``python -m tinyattn demo``: train a small attention model and look inside it.

The task: read a sequence of digits and write it out transformed (reversed by
default). The model is deliberately small enough to understand:

    tokens (B, n) --Embedding + position--> memory (B, n, d)
    one learned query per output position (n, d)
    context, weights = MultiheadAttention(queries, memory, memory)   # (B, n, d), (B, n, n)
    logits = Linear(LayerNorm(context + queries))                     # (B, n, vocab)

To reverse, output position i must attend to input position n-1-i: after
training, the attention map shows that alignment (an anti-diagonal). The demo
prints the loss curve, held-out accuracy and the map, then gradient-checks the
trained attention layer against finite differences. It exits non-zero when
held-out accuracy stays below the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import tinyattn
from tinyattn import nn
from tinyattn.nn import functional as F

TASKS = {
    "reverse": lambda x: x[:, ::-1],
    "copy": lambda x: x,
    "rotate": lambda x: np.roll(x, 1, axis=1),
}


class AlignModel(nn.Module):
    """Positional queries attend over an embedded input sequence (one attention layer)."""

    def __init__(self, vocab: int, length: int, d_model: int = 32, heads: int = 1) -> None:
        super().__init__()
        self.vocab, self.length = vocab, length
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(length, d_model)
        self.queries = nn.Parameter(tinyattn.randn(length, d_model) * 0.5)
        self.attention = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)
        self.register_buffer("positions", tinyattn.arange(length), persistent=False)

    def forward(self, tokens):
        memory = self.embed(tokens) + self.position(self.positions)
        queries = self.queries.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        context, weights = self.attention(queries, memory, memory, need_weights=True)
        return self.out(self.norm(context + queries)), weights


def _batch(rng, n: int, length: int, vocab: int, task: str):
    x = rng.integers(0, vocab, (n, length))
    y = np.ascontiguousarray(TASKS[task](x))
    return tinyattn.tensor(x), tinyattn.tensor(y)


def _bar(step: int, total: int, loss: float, width: int = 30) -> str:
    done = int(width * step / total)
    return f"\r  [{'#' * done}{'.' * (width - done)}] step {step:4d}/{total}  loss {loss:6.3f}"


def _gradcheck_attention(model: AlignModel, rng) -> tuple[bool, str]:
    """Finite differences vs backward for the trained attention layer, in float64."""
    import copy

    from tinyattn.autograd.gradcheck import GradcheckError, gradcheck

    layer = copy.deepcopy(model.attention).double()
    d = layer.embed_dim
    q = tinyattn.tensor(rng.standard_normal((1, 3, d)), requires_grad=True)
    kv = tinyattn.tensor(rng.standard_normal((1, 4, d)), requires_grad=True)
    w = layer.in_proj_weight
    try:
        gradcheck(lambda q, kv, w: layer(q, kv, kv)[0], (q, kv, w))
        n = q.numel() + kv.numel() + w.numel()
        return True, f"PASS ({n} input elements: query, key/value and in_proj_weight)"
    except GradcheckError as err:
        return False, f"FAIL: {err}"


def _train(model: AlignModel, task: str, steps: int, batch: int, rng) -> list[float]:
    """Adam on cross-entropy over fresh random batches; prints a progress bar."""
    length, vocab = model.length, model.vocab
    optimizer = tinyattn.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    interactive = sys.stdout.isatty()  # a redrawn bar in a terminal, one line per 10% in logs
    for step in range(1, steps + 1):
        x, y = _batch(rng, batch, length, vocab, task)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if interactive and (step % 10 == 0 or step == steps):
            print(_bar(step, steps, loss.item()), end="", flush=True)
        elif not interactive and (step % max(steps // 10, 1) == 0 or step == steps):
            print(_bar(step, steps, loss.item()).lstrip("\r"), flush=True)
    if interactive:
        print()
    marks = sorted({0, steps // 4, steps // 2, 3 * steps // 4, steps - 1})
    print("  loss curve: " + "  ".join(f"step {i + 1}: {losses[i]:.3f}" for i in marks))
    return losses


def _evaluate(model: AlignModel, task: str, seed: int):
    """Exact-match and per-token accuracy on 500 unseen sequences; returns (exact, x, weights)."""
    model.eval()
    with tinyattn.no_grad():
        x, y = _batch(np.random.default_rng(seed + 1), 500, model.length, model.vocab, task)
        logits, weights = model(x)
        pred = logits.argmax(-1)
        exact = (pred == y).all(dim=-1).float().mean().item()
        per_token = (pred == y).float().mean().item()
    print(
        f"held-out accuracy (500 unseen sequences): exact match {exact:.1%}, per token {per_token:.1%}"
    )
    return exact, x, weights


def _show_attention(x, weights, task: str, out: str | None) -> None:
    """The first held-out sequence's attention map in the terminal (and as a PNG with ``out``)."""
    sample = x[0].tolist()
    x_labels = [str(t) for t in sample]
    y_labels = [f"out{i}" for i in range(len(sample))]
    print(f"\nattention of output positions (rows) over input positions (columns), input {sample}:")
    tinyattn.viz.attention_map(weights[0], x_labels=x_labels, y_labels=y_labels)
    if out is None:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    png = Path(out) / "attention.png"
    try:
        tinyattn.viz.attention_map(
            weights[0],
            x_labels,
            y_labels,
            show=False,
            path=str(png),
            title=f"{task}: attention weights",
        )
        print(f"wrote {png}")
    except RuntimeError as err:
        print(f"(no figure: {err})")


def run(
    task: str = "reverse",
    steps: int = 600,
    seed: int = 0,
    out: str | None = None,
    length: int = 8,
    vocab: int = 10,
    batch: int = 64,
    target: float = 0.95,
) -> int:
    """Train, evaluate, show the attention map and gradient-check; return an exit code."""
    if task not in TASKS:
        raise ValueError(f"demo: unknown task {task!r}; choose one of {sorted(TASKS)}")
    t_start = time.perf_counter()
    tinyattn.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = AlignModel(vocab, length)
    print(
        f"task: {task} sequences of {length} digits; model: {sum(p.numel() for p in model.parameters())} "
        f"parameters, one attention layer; {steps} steps of batch {batch}"
    )
    _train(model, task, steps, batch, rng)
    exact, x, weights = _evaluate(model, task, seed)
    _show_attention(x, weights, task, out)
    ok, report = _gradcheck_attention(model, rng)
    print(
        f"\ngradient check of the trained attention layer (float64, finite differences): {report}"
    )
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    if exact < target:
        print(f"FAILED: exact-match accuracy {exact:.1%} is below the target {target:.0%}")
        return 1
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tinyattn demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--task", default="reverse", choices=sorted(TASKS))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", default=None, help="directory for attention.png (needs matplotlib)"
    )
    args = parser.parse_args(argv)
    return run(args.task, args.steps, args.seed, args.out)
