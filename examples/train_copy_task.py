"""Train a small encoder-decoder Transformer on the copy task, using only ``tinyattn.nn``.

The model reads a random sequence of 10 tokens and must write it back. Tokens are
1..10; token 0 is the start symbol the decoder begins from (vocabulary 11). Training
uses teacher forcing (the decoder sees ``[start, y1..y9]`` and predicts ``y1..y10``
under a causal mask); evaluation greedy-decodes held-out sequences one token at a
time and counts a sequence as right only if all 10 tokens are.

Run: python examples/train_copy_task.py [--epochs N] [--seed S] [--quick]

Exits with status 1 if the held-out exact-match accuracy is below 95% (or, with
``--quick``, if the loss did not decrease).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

import tinyattn as torch
from tinyattn import nn

VOCAB = 11  # 0 is the start symbol, 1..10 are data tokens
START = 0
SEQ_LEN = 10


class PositionalEncoding(nn.Module):
    """The sinusoidal encoding of "Attention Is All You Need", added to (S, N, E) inputs."""

    def __init__(self, d_model: int, max_len: int = 64) -> None:
        super().__init__()
        position = np.arange(max_len)[:, None]
        div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = np.zeros((max_len, 1, d_model), dtype=np.float32)
        pe[:, 0, 0::2] = np.sin(position * div_term)
        pe[:, 0, 1::2] = np.cos(position * div_term)
        self.register_buffer("pe", torch.from_numpy(pe))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pe[: x.size(0)]


class CopyTransformer(nn.Module):
    """Embedding + positional encoding -> ``nn.Transformer`` -> Linear to the vocabulary."""

    def __init__(self, d_model: int = 32, nhead: int = 4, layers: int = 1, ff: int = 64) -> None:
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(VOCAB, d_model)
        self.tgt_embed = nn.Embedding(VOCAB, d_model)
        self.pos = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(
            d_model, nhead, layers, layers, dim_feedforward=ff, dropout=0.0
        )
        self.generator = nn.Linear(d_model, VOCAB)

    def embed(self, embedding: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        # tokens (N, L) -> (L, N, E): nn.Transformer is sequence-first by default.
        # No sqrt(d_model) scaling here: nn.Embedding starts at N(0, 1), the same scale as
        # the positional encoding; scaling by sqrt(32) drowns the positions, and the copy
        # task (which is all about positions) then stalls near loss 1.2 after 12 epochs.
        return self.pos(embedding(tokens.t()))

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.transformer.encoder(self.embed(self.src_embed, src))

    def decode(self, memory: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Logits (N, T, VOCAB) for every prefix of ``tgt`` (N, T)."""
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        out = self.transformer.decoder(self.embed(self.tgt_embed, tgt), memory, tgt_mask=mask)
        return self.generator(out).transpose(0, 1)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(src), tgt)


def random_batch(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(1, VOCAB, size=(n, SEQ_LEN))


def with_start(seqs: np.ndarray) -> np.ndarray:
    """Decoder input for teacher forcing: the start symbol, then the target shifted right."""
    return np.concatenate([np.full((len(seqs), 1), START), seqs[:, :-1]], axis=1)


@torch.no_grad()
def greedy_decode(model: CopyTransformer, src: torch.Tensor) -> torch.Tensor:
    """Decode ``src`` (N, L) token by token, always taking the most likely next token."""
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), START, dtype=torch.long)
    for _ in range(SEQ_LEN):
        next_token = model.decode(memory, ys)[:, -1].argmax(dim=-1)
        ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)
    return ys[:, 1:]


def progress(step: int, total: int, width: int = 30) -> str:
    filled = width * step // total
    return "[" + "#" * filled + "." * (width - filled) + f"] {step}/{total}"


def train(
    epochs: int = 12,
    seed: int = 0,
    steps_per_epoch: int = 40,
    batch_size: int = 64,
    n_test: int = 200,
    d_model: int = 32,
    warmup: int = 60,
    lr: float = 3e-3,
    verbose: bool = True,
) -> dict:
    """Train, then greedy-decode ``n_test`` held-out sequences. Returns losses and accuracy."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = CopyTransformer(d_model=d_model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    # Linear warmup, then inverse-square-root decay (the paper's schedule, rescaled).
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))
    )
    criterion = nn.CrossEntropyLoss()

    # Held out: sequences drawn from their own generator and removed from training batches.
    test = np.random.default_rng(seed + 10_000).integers(1, VOCAB, size=(n_test, SEQ_LEN))
    held_out = {tuple(row) for row in test}

    losses = []
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        total = 0.0
        for step in range(1, steps_per_epoch + 1):
            seqs = random_batch(rng, batch_size)
            seqs = seqs[[tuple(row) not in held_out for row in seqs]]
            src = torch.from_numpy(seqs)
            tgt_in = torch.from_numpy(with_start(seqs))
            logits = model(src, tgt_in)
            loss = criterion(logits.reshape(-1, VOCAB), src.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item()
            if verbose and sys.stdout.isatty():
                print(f"\repoch {epoch:2d} {progress(step, steps_per_epoch)}", end="", flush=True)
        losses.append(total / steps_per_epoch)
        if verbose:
            bar = progress(steps_per_epoch, steps_per_epoch)
            print(f"\repoch {epoch:2d} {bar} loss {losses[-1]:.4f}", flush=True)

    model.eval()
    decoded = greedy_decode(model, torch.from_numpy(test)).numpy()
    exact = float((decoded == test).all(axis=1).mean())
    token_acc = float((decoded == test).mean())
    seconds = time.perf_counter() - start
    if verbose:
        print(f"source : {test[0].tolist()}\ndecoded: {decoded[0].tolist()}")
        print(
            f"held-out exact-match accuracy {exact:.1%} (token accuracy {token_acc:.1%}) "
            f"on {n_test} sequences; {seconds:.1f} s"
        )
    return {"losses": losses, "accuracy": exact, "token_accuracy": token_acc, "seconds": seconds}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few short epochs; checks only that the loss decreases (for tests)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        result = train(epochs=args.epochs, seed=args.seed, steps_per_epoch=10, n_test=20)
        result["ok"] = result["losses"][-1] < result["losses"][0]
        if not result["ok"]:
            print(f"FAIL: loss did not decrease: {result['losses']}")
    else:
        result = train(epochs=args.epochs, seed=args.seed)
        result["ok"] = result["accuracy"] >= 0.95
        if not result["ok"]:
            print(f"FAIL: exact-match accuracy {result['accuracy']:.1%} < 95%")
    return result


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
