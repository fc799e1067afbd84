"""The ``inference`` suite: a GPT-2-small-shaped model (random weights, batch 1) used as a
torch user writes it, on tinyattn or torch, timed in one process per framework.

The model is ``_cases.gpt2_model`` (nanoGPT's layout and initialisation, the head tied to
the token embedding), run under ``inference_mode``. Per process it reports:

- ``construction s``: building the model once (allocation and initialisation);
- ``prefill 128 tokens ms``: the prompt through the model, logits of the last position;
- ``decode tokens/s``: greedy decoding after the prompt, one token per call, with a
  concatenating KV cache (``torch.cat`` per layer and step, what users write) and with a
  preallocated one (written into in place; tinyattn's is :class:`tinyattn.models.KVCache`);
- ``peak RSS MiB``: the process's high-water mark (``VmHWM``) at the end.

The cases file is imported on its own by the benchmark child (no ``tinyattn`` import in a
torch process), so this module imports nothing from the package.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

PROMPT = 128


def config(quick: bool) -> dict:
    """Model sizes, prompt length and decoded tokens (``quick``: a tiny model)."""
    if quick:
        return dict(n_layer=1, d=32, n_head=2, n_ctx=32, vocab=64, prompt=8, new_tokens=4)
    return dict(n_layer=12, d=768, n_head=12, n_ctx=1024, vocab=50257, prompt=PROMPT, new_tokens=32)


class ConcatCache:
    """Keys and values per layer, grown by ``cat`` on the time axis at every step."""

    def __init__(self, lib) -> None:
        self.lib, self.kv, self.length = lib, {}, 0

    def update(self, key, value, layer: int):
        if layer in self.kv:
            old_k, old_v = self.kv[layer]
            key, value = self.lib.cat([old_k, key], dim=2), self.lib.cat([old_v, value], dim=2)
        self.kv[layer] = key, value
        if layer == 0:
            self.length = key.shape[2]
        return key, value


class PreallocatedCache:
    """Keys and values per layer in buffers of ``max_len`` positions, written in place."""

    def __init__(self, lib, n_layer: int, n_head: int, max_len: int, head_dim: int) -> None:
        shape = (1, n_head, max_len, head_dim)
        self.keys = [lib.zeros(shape) for _ in range(n_layer)]
        self.values = [lib.zeros(shape) for _ in range(n_layer)]
        self.length = 0
        self._start = 0

    def update(self, key, value, layer: int):
        if layer == 0:
            self._start = self.length
            self.length += key.shape[2]
        start, end = self._start, self.length
        self.keys[layer][:, :, start:end] = key
        self.values[layer][:, :, start:end] = value
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]


def new_cache(lib, kind: str, c: dict):
    """A fresh cache of ``kind`` ("concatenating" or "preallocated") for ``c``'s model."""
    if kind == "concatenating":
        return ConcatCache(lib)
    max_len = c["prompt"] + c["new_tokens"]
    if lib.__name__ == "tinyattn":  # the library's own fast path
        from tinyattn.models import KVCache

        return KVCache(c["n_layer"], c["n_head"], max_len, c["d"] // c["n_head"])
    return PreallocatedCache(lib, c["n_layer"], c["n_head"], max_len, c["d"] // c["n_head"])


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def greedy_decode(model, lib, prompt, cache, new_tokens: int) -> tuple[list[int], float]:
    """Prefill (untimed), then ``new_tokens`` greedy steps: (tokens, decode seconds)."""
    logits = model(prompt, cache)
    tokens = [int(logits[0, -1].argmax())]
    start = time.perf_counter()
    for _ in range(new_tokens - 1):
        logits = model(lib.tensor([[tokens[-1]]]), cache)
        tokens.append(int(logits[0, -1].argmax()))
    return tokens, time.perf_counter() - start


def peak_rss_mib() -> float | None:
    """The process's peak resident set (``VmHWM``), or None where /proc is missing."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run(lib, quick: bool, repeats: int) -> dict[str, float]:
    """The suite's figures for one framework (``lib``: the tinyattn or torch module)."""
    try:
        from . import _cases as cases
    except ImportError:  # run as the benchmark child's sibling script
        import _cases as cases  # type: ignore[no-redef]
    c = config(quick)
    sizes = {k: c[k] for k in ("n_layer", "d", "n_head", "n_ctx", "vocab")}
    lib.manual_seed(0)
    start = time.perf_counter()
    model = cases.gpt2_model(lib, **sizes)
    out = {"construction s": time.perf_counter() - start}
    model.eval()
    ids = np.random.default_rng(0).integers(0, c["vocab"], (1, c["prompt"]))
    prompt = lib.tensor(ids)
    with lib.inference_mode():
        model(prompt, new_cache(lib, "concatenating", c))  # warm-up
        prefill = [
            _timed(lambda: model(prompt, new_cache(lib, "concatenating", c)))
            for _ in range(repeats)
        ]
        out[f"prefill {c['prompt']} tokens ms"] = 1e3 * statistics.median(prefill)
        tokens = {}
        for kind in ("concatenating", "preallocated"):
            rates = []
            for _ in range(max(1, repeats // 2) + 1):  # the first is a warm-up
                tokens[kind], seconds = greedy_decode(
                    model, lib, prompt, new_cache(lib, kind, c), c["new_tokens"]
                )
                rates.append((c["new_tokens"] - 1) / seconds)
            out[f"decode tokens/s, {kind} cache"] = statistics.median(rates[1:])
    if tokens["concatenating"] != tokens["preallocated"]:
        raise RuntimeError(f"{lib.__name__}: the two caches decoded different tokens")
    out["peak RSS MiB"] = peak_rss_mib() or float("nan")
    return out
