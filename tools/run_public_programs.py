"""Run public attention programs unchanged except for the import: ``import tinyattn as torch``.

For each program, the files are copied from a fetched bare mirror
(``<mirrors>/<owner>+<name>/repo``) into a fresh directory under /tmp, a tiny
synthetic dataset is written next to them, and the program runs twice with a
tiny configuration (command-line flags, or for scripts whose settings are
module constants, a rewrite of those constants): once under torch as published,
once with every ``torch`` import rewritten to ``tinyattn``. Nothing of the
programs is stored in this repository; the copies stay under /tmp.

Reported per program and library: exit status, the losses printed, whether the
loss decreased, the first error line. Losses are not expected to equal torch's
step for step (torch's and tinyattn's random generators differ, so initial
weights and batches differ); the first loss is compared with ln(vocab).

    python tools/run_public_programs.py --mirrors /work/.mirror [--only nanoGPT] [--timeout 600]
    python tools/run_public_programs.py --mirrors /work/.mirror --markdown   # table for the docs
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

_SWAPS = [
    # import torch.nn.functional as F   -> import tinyattn.nn.functional as F
    (re.compile(r"^(\s*)import torch((?:\.\w+)+) as (\w+)\s*$"), r"\1import tinyattn\2 as \3"),
    # import torch.onnx                 -> import tinyattn as torch; import tinyattn.onnx
    (re.compile(r"^(\s*)import torch((?:\.\w+)+)\s*$"), r"\1import tinyattn as torch; import tinyattn\2"),
    (re.compile(r"^(\s*)import torch\s*$"), r"\1import tinyattn as torch"),
    (re.compile(r"^(\s*)import torch as (\w+)\s*$"), r"\1import tinyattn as \2"),
    # from torch.utils.data import X    -> from tinyattn.utils.data import X
    (re.compile(r"^(\s*)from torch((?:\.\w+)*) import "), r"\1from tinyattn\2 import "),
]  # fmt: skip


def swap_imports(source: str) -> tuple[str, int]:
    """The source with every torch import made a tinyattn import, and how many were changed."""
    out, n = [], 0
    for line in source.splitlines():
        for pat, rep in _SWAPS:
            new = pat.sub(rep, line)
            if new != line:
                line, n = new, n + 1
                break
        out.append(line)
    return "\n".join(out) + "\n", n


@dataclass
class Program:
    name: str
    repo: str
    files: list[str]
    argv: list[str]
    what: str
    vocab: int
    constants: dict[str, str] = field(default_factory=dict)  # file -> regex rewrites
    prepare: str = ""
    loss_re: str = r"loss[ =:]+([0-9.]+)"
    then: list[list[str]] = field(default_factory=list)  # further commands (sample.py)


def _text(n: int = 6000, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    words = [
        "the ",
        "cat ",
        "sat ",
        "on ",
        "a ",
        "mat.\n",
        "dog ",
        "ran ",
        "far ",
        "away ",
        "O God, O God! ",
    ]
    return "".join(rng.choice(words, size=n // 4))


def prepare_nanogpt(work: Path) -> None:
    """data/tiny/{train,val}.bin (uint16 tokens) and meta.pkl, as nanoGPT's prepare.py writes them."""
    text = _text()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    d = work / "data" / "tiny"
    d.mkdir(parents=True)
    n = int(0.9 * len(ids))
    ids[:n].tofile(d / "train.bin")
    ids[n:].tofile(d / "val.bin")
    with open(d / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def prepare_input_txt(work: Path) -> None:
    (work / "input.txt").write_text(_text())


def prepare_wikitext(work: Path) -> None:
    d = work / "data" / "tiny"
    d.mkdir(parents=True)
    for i, split in enumerate(("train", "valid", "test")):
        (d / f"{split}.txt").write_text(_text(3000 if split == "train" else 600, seed=i))


def prepare_llama2c(work: Path) -> None:
    """data/tok64/data{00,01}.bin: uint16 token shards as llama2.c's pretokenize writes them
    for a custom vocabulary (shard 0 is the validation split, the others train).
    tinystories.py imports requests, sentencepiece and tqdm (unused on this path): they must
    be installed."""
    text = _text(12000)
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.uint16)
    d = work / "data" / "tok64"
    d.mkdir(parents=True)
    half = len(ids) // 2
    ids[:half].tofile(d / "data00.bin")
    ids[half:].tofile(d / "data01.bin")


PREPARE = {
    "nanogpt": prepare_nanogpt,
    "input_txt": prepare_input_txt,
    "wikitext": prepare_wikitext,
    "llama2c": prepare_llama2c,
}

PROGRAMS = [
    Program(
        "nanoGPT train.py + sample.py",
        "karpathy/nanoGPT",
        ["model.py", "train.py", "sample.py", "configurator.py"],
        ["train.py", "--dataset=tiny", "--device=cpu", "--compile=False", "--dtype=float32",
         "--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=16", "--batch_size=4",
         "--max_iters=30", "--lr_decay_iters=30", "--warmup_iters=2", "--eval_interval=15",
         "--eval_iters=2", "--log_interval=1", "--dropout=0.0", "--out_dir=out",
         "--gradient_accumulation_steps=1", "--learning_rate=3e-3", "--always_save_checkpoint=True"],
        "GPT, AdamW groups, cosine LR, grad clip, checkpoint; then sampling from the checkpoint",
        vocab=22,
        prepare="nanogpt",
        loss_re=r"^iter \d+: loss ([0-9.]+)",
        then=[["sample.py", "--out_dir=out", "--device=cpu", "--compile=False", "--dtype=float32",
               "--num_samples=1", "--max_new_tokens=20", "--start=the"]],
    ),
    Program(
        "ng-video-lecture gpt.py",
        "karpathy/ng-video-lecture",
        ["gpt.py"],
        ["gpt.py"],
        "GPT from the lecture: training with estimate_loss, then generation",
        vocab=22,
        prepare="input_txt",
        constants={"gpt.py": "batch_size=4;block_size=16;max_iters=30;eval_interval=10;"
                             "eval_iters=2;n_embd=32;n_head=2;n_layer=2;dropout=0.0;"
                             "learning_rate=3e-3;max_new_tokens=50"},
        loss_re=r"train loss ([0-9.]+)",
    ),
    Program(
        "minGPT chargpt",
        "karpathy/minGPT",
        ["mingpt/__init__.py", "mingpt/model.py", "mingpt/trainer.py", "mingpt/utils.py",
         "mingpt/bpe.py", "projects/chargpt/chargpt.py"],
        ["projects/chargpt/chargpt.py", "--trainer.max_iters=30", "--trainer.batch_size=4",
         "--trainer.num_workers=0", "--trainer.device=cpu", "--data.block_size=16",
         "--model.model_type=gpt-nano", "--trainer.learning_rate=3e-3"],
        "GPT, Trainer over a DataLoader (RandomSampler), AdamW groups",
        vocab=22,
        prepare="input_txt",
        loss_re=r"train loss ([0-9.]+)",
    ),
    Program(
        "word_language_model (Transformer)",
        "pytorch/examples",
        ["word_language_model/main.py", "word_language_model/model.py",
         "word_language_model/data.py"],
        ["word_language_model/main.py", "--data", "data/tiny", "--model", "Transformer",
         "--emsize", "16", "--nhid", "16", "--nlayers", "1", "--nhead", "2", "--bptt", "8",
         "--batch_size", "4", "--epochs", "2", "--log-interval", "5", "--lr", "5",
         "--save", "model.pt"],
        "nn.TransformerEncoder LM, manual SGD, save/load of the whole model",
        vocab=14,
        prepare="wikitext",
        loss_re=r"loss\s+([0-9.]+)",
    ),
    Program(
        "llama2.c train.py",
        "karpathy/llama2.c",
        ["model.py", "train.py", "tinystories.py", "tokenizer.py", "export.py", "configurator.py"],
        ["train.py", "--vocab_source=custom", "--vocab_size=64", "--device=cpu", "--compile=False",
         "--dtype=float32", "--batch_size=4", "--max_seq_len=16", "--dim=32", "--n_layers=2",
         "--n_heads=4", "--n_kv_heads=2", "--multiple_of=8", "--gradient_accumulation_steps=1",
         "--max_iters=30", "--warmup_iters=2", "--eval_interval=15", "--eval_iters=2",
         "--learning_rate=3e-3", "--out_dir=out", "--always_save_checkpoint=True"],
        "Llama 2 (RMSNorm, RoPE, grouped-query attention, SwiGLU) over an IterableDataset of "
        "token shards, AdamW groups, cosine LR, grad clip, checkpoint and model.bin export",
        vocab=64,
        prepare="llama2c",
        loss_re=r"^\d+ \| loss ([0-9.]+)",
    ),
]  # fmt: skip

NOT_RUN = {
    "rasbt/LLMs-from-scratch ch05 gpt_train.py": "needs tiktoken's GPT-2 encoding, which "
    "tiktoken downloads at run time (no network here), and matplotlib",
    "harvardnlp/annotated-transformer": "runs spacy/torchtext data pipelines and altair "
    "charts at import; its model code is exercised by tests/tutorials/test_annotated_transformer.py",
    "karpathy/llama2.c sample.py": "samples with a sentencepiece tokenizer: the Llama 2 one "
    "needs a Llama 2 checkpoint, a custom one is trained on the downloaded TinyStories "
    "(no network here)",
    "labmlai/annotated_deep_learning_paper_implementations": "library modules and experiments "
    "built on the labml package's configs, tracker and trainer (not installed)",
    "hkproj/pytorch-transformer": "train.py downloads opus_books with Hugging Face datasets and "
    "trains tokenizers at run time (no network here)",
    "rasbt/LLMs-from-scratch ch03 mha-implementations.ipynb": "a notebook; its benchmark cells "
    "call torch.cuda.Event and torch.cuda.synchronize, which raise on a CPU build of torch too",
    "rasbt/LLMs-from-scratch ch04 gpt_with_kv_cache.py": "encodes its prompt with tiktoken's "
    "GPT-2 encoding, which tiktoken downloads at run time (no network here)",
    "rasbt/LLMs-from-scratch standalone-llama32 / standalone-qwen3": "notebooks that download "
    "tokenizer and weights from the Hugging Face hub (no network here)",
    "pytorch/examples language_translation": "torchtext (not installed) and its Multi30k download",
    "lucidrains/vit-pytorch mae.py, cait.py, vit_for_small_dataset.py": "library modules with "
    "no script to run",
}


def _git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True
    ).stdout


def _rewrite_constants(src: str, spec: str) -> str:
    """``name=value;...``: module-level assignments and keyword arguments of that name."""
    for item in spec.split(";"):
        name, value = item.split("=", 1)
        src = re.sub(rf"^{name}\s*=\s*[^#\n]+", f"{name} = {value} ", src, flags=re.M)
        src = re.sub(rf"\b{name}=\d+", f"{name}={value}", src)
    return src


def run_one(prog: Program, mirrors: str, lib: str, timeout: int) -> dict:
    gitdir = os.path.join(mirrors, prog.repo.replace("/", "+"), "repo")
    commit = _git(gitdir, "rev-parse", "HEAD").decode().strip()
    work = Path(tempfile.mkdtemp(prefix=f"public-{lib}-"))
    swaps = 0
    for f in prog.files:
        src = _git(gitdir, "show", f"HEAD:{f}").decode()
        if f in prog.constants:
            src = _rewrite_constants(src, prog.constants[f])
        if lib == "tinyattn":
            src, n = swap_imports(src)
            swaps += n
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        (work / f).write_text(src)
    if prog.prepare:
        PREPARE[prog.prepare](work)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{work}", PYTHONUNBUFFERED="1")
    env["OMP_NUM_THREADS"] = "1"
    outputs, code = [], 0
    for argv in [prog.argv, *prog.then]:
        script = work / argv[0]
        try:
            p = subprocess.run(
                [sys.executable, str(script), *argv[1:]], cwd=work,
                env=env, capture_output=True, text=True, timeout=timeout,
            )  # fmt: skip
            outputs.append(p.stdout + p.stderr)
            code = p.returncode
        except subprocess.TimeoutExpired as e:
            outputs.append(
                (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            )
            code = "timeout"
        if code != 0:
            break
    out = "\n".join(outputs)
    losses = [float(x) for x in re.findall(prog.loss_re, outputs[0] if outputs else "", flags=re.M)]
    err = next(
        (ln for ln in reversed(out.strip().splitlines()) if re.match(r"\w*(Error|Exception)", ln)),
        "",
    )
    shutil.rmtree(work, ignore_errors=True)
    return {
        "commit": commit, "lib": lib, "exit": code, "swapped": swaps, "losses": losses,
        "decreased": len(losses) >= 2 and losses[-1] < losses[0], "error": err,
    }  # fmt: skip


def summary(prog: Program, r: dict) -> str:
    if r["exit"] != 0:
        return f"fails: `{r['error'] or r['exit']}`"
    ls = r["losses"]
    if not ls:
        return "runs; no loss printed"
    return (
        f"runs; {len(ls)} losses {ls[0]:.3f} -> {ls[-1]:.3f} "
        f"({'decreased' if r['decreased'] else 'did not decrease'}; ln(vocab) = {math.log(prog.vocab):.3f})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--only", default="", help="run programs whose name contains this")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("--libs", default="torch,tinyattn")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    rows = []
    for prog in PROGRAMS:
        if args.only and args.only not in prog.name:
            continue
        results = {
            lib: run_one(prog, args.mirrors, lib, args.timeout) for lib in args.libs.split(",")
        }
        for lib, r in results.items():
            print(f"{prog.name} [{lib}] exit={r['exit']} swapped={r['swapped']} "
                  f"losses={r['losses'][:3]}...{r['losses'][-2:]} error={r['error']!r}", flush=True)  # fmt: skip
        rows.append((prog, results))
    if args.markdown:
        print("\n| program | commit | what runs | torch | tinyattn (imports swapped) |")
        print("| --- | --- | --- | --- | --- |")
        for prog, res in rows:
            t, a = res.get("torch"), res.get("tinyattn")
            commit = (t or a)["commit"][:10]
            print(f"| {prog.repo}: {prog.name} | `{commit}` | {prog.what}; `{' '.join(prog.argv)}` "
                  f"| {summary(prog, t) if t else '-'} | {summary(prog, a) if a else '-'} |")  # fmt: skip
        for name, why in NOT_RUN.items():
            print(f"| {name} | | not run: {why} | | |")
    for lib in args.libs.split(","):
        ok = sum(res[lib]["exit"] == 0 for _, res in rows)
        print(f"{ok}/{len(rows)} programs run under {lib}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
