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
from public_program_drivers import driver_source

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
    # einops' torch layers are torch Modules; tinyattn.nn has the same layers on its Module
    (re.compile(r"^(\s*)from einops\.layers\.torch import "), r"\1from tinyattn.nn import "),
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
    # a driver of tools/public_program_drivers.py: run instead of argv, from torch's weights
    driver: str = ""
    # (repository, path, destination): data files copied from another fetched mirror
    data_from: list[tuple[str, str, str]] = field(default_factory=list)
    # printed lines that must equal torch's (parameter counts, module reprs)
    same_re: str = ""
    cwd: str = ""  # directory (in the copy) the commands run in, when not its root


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


def prepare_sentence_pairs(work: Path) -> None:
    """corpus.txt: one pair of sentences per line, tab-separated (BERT-pytorch's format)."""
    lines = [ln.strip() for ln in _text(4000).split("\n") if ln.strip()]
    pairs = [f"{a}\t{b}" for a, b in zip(lines[::2], lines[1::2])]
    (work / "corpus.txt").write_text("\n".join(pairs[:64]) + "\n")


def prepare_citation_graph(work: Path, into: str = "data/cora") -> None:
    """A citation graph in Cora's file format (``cora.content``: paper id, binary word
    features, class name; ``cora.cites``: cited and citing ids): 1,800 papers, 64 words,
    7 classes, 5,000 citations drawn mostly within a class, so the labels can be learnt.
    Cora itself is not in the fetched mirror (a large file)."""
    rng = np.random.default_rng(0)
    n, words, classes = 1800, 64, 7
    ids = rng.choice(np.arange(10_000, 10_000_000), size=n, replace=False)
    label = rng.integers(0, classes, size=n)
    topic = rng.random((classes, words)) < 0.15
    feats = (rng.random((n, words)) < 0.05) | (topic[label] & (rng.random((n, words)) < 0.6))
    d = work / into
    d.mkdir(parents=True, exist_ok=True)
    rows = [f"{ids[i]}\t" + "\t".join(map(str, feats[i].astype(int))) + f"\tClass_{label[i]}"
            for i in range(n)]  # fmt: skip
    (d / "cora.content").write_text("\n".join(rows) + "\n")
    a = rng.integers(0, n, size=5000)
    same = np.array([rng.choice(np.flatnonzero(label == label[i])) for i in a])
    b = np.where(rng.random(5000) < 0.8, same, rng.integers(0, n, size=5000))
    keep = a != b
    (d / "cora.cites").write_text(
        "".join(f"{ids[x]}\t{ids[y]}\n" for x, y in zip(a[keep], b[keep]))
    )


PREPARE = {
    "citation_graph": prepare_citation_graph,
    "citation_graph_gat": lambda work: prepare_citation_graph(work, "gat/cora"),
    "sentence_pairs": prepare_sentence_pairs,
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
    Program(
        "mixture-of-experts example.py",
        "davidmrau/mixture-of-experts",
        ["moe.py", "example.py"],
        ["example.py"],
        "sparsely-gated mixture of experts (noisy top-k gating, SparseDispatcher, "
        "torch.distributions.Normal load loss), one Adam step and an evaluation",
        vocab=20,
        loss_re=r"Training Results - loss: ([0-9.]+)",
    ),
    Program(
        "mixture-of-experts MoE layer",
        "davidmrau/mixture-of-experts",
        ["moe.py"],
        [],
        "MoE layer from torch's weights: outputs, auxiliary loss, gradients (eval gating); "
        "noisy training gating runs",
        vocab=5,
        driver="moe",
    ),
    Program(
        "pyGAT train.py (dense GAT)",
        "Diego999/pyGAT",
        ["train.py", "models.py", "layers.py", "utils.py"],
        ["train.py", "--no-cuda", "--epochs", "8", "--hidden", "4", "--nb_heads", "2",
         "--patience", "100"],
        "graph attention network on a Cora-format graph (1,800 nodes, dense adjacency), Adam, "
        "checkpoint per epoch and reload of the best",
        vocab=7,
        prepare="citation_graph",
        loss_re=r"loss_train: ([0-9.]+)",
    ),
    Program(
        "pyGAT train.py --sparse (SpGAT)",
        "Diego999/pyGAT",
        ["train.py", "models.py", "layers.py", "utils.py"],
        ["train.py", "--no-cuda", "--sparse", "--epochs", "8", "--hidden", "4", "--nb_heads",
         "2", "--patience", "100"],
        "sparse graph attention: a custom autograd Function for sparse x dense products "
        "(torch.sparse_coo_tensor, a.t()), edge lists",
        vocab=7,
        prepare="citation_graph",
        loss_re=r"loss_train: ([0-9.]+)",
    ),
    Program(
        "examples gat/main.py",
        "pytorch/examples",
        ["gat/main.py"],
        ["main.py", "--epochs", "6", "--hidden-dim", "8", "--num-heads", "2",
         "--val-every", "1", "--no-accel"],
        "pytorch/examples GAT on a Cora-format graph: to_sparse() feature scaling, sparse @ dense, "
        "multi-head graph attention, NLLLoss",
        vocab=7,
        prepare="citation_graph_gat",
        loss_re=r"loss_train: ([0-9.]+)",
        cwd="gat",
    ),
    Program(
        "swin-transformer-pytorch example.py",
        "berniwal/swin-transformer-pytorch",
        ["example.py", "swin_transformer_pytorch/__init__.py",
         "swin_transformer_pytorch/swin_transformer.py"],
        ["example.py"],
        "Swin-T (shifted windows, relative position bias, patch merging, einops) on one "
        "224x224 image; prints the module tree",
        vocab=3,
        same_re=r"^\s*\(.*$",
    ),
    Program(
        "swin-transformer-pytorch SwinTransformer",
        "berniwal/swin-transformer-pytorch",
        ["swin_transformer_pytorch/__init__.py", "swin_transformer_pytorch/swin_transformer.py"],
        [],
        "tiny Swin (2 stages, window 2) from torch's weights: logits and gradients",
        vocab=4,
        driver="swin",
    ),
    Program(
        "BERT-pytorch bert-vocab + bert",
        "codertimo/BERT-pytorch",
        ["bert_pytorch/__init__.py", "bert_pytorch/__main__.py",
         "bert_pytorch/dataset/__init__.py", "bert_pytorch/dataset/dataset.py",
         "bert_pytorch/dataset/vocab.py", "bert_pytorch/model/__init__.py",
         "bert_pytorch/model/attention/__init__.py", "bert_pytorch/model/attention/multi_head.py",
         "bert_pytorch/model/attention/single.py", "bert_pytorch/model/bert.py",
         "bert_pytorch/model/embedding/__init__.py", "bert_pytorch/model/embedding/bert.py",
         "bert_pytorch/model/embedding/position.py", "bert_pytorch/model/embedding/segment.py",
         "bert_pytorch/model/embedding/token.py", "bert_pytorch/model/language_model.py",
         "bert_pytorch/model/transformer.py", "bert_pytorch/model/utils/__init__.py",
         "bert_pytorch/model/utils/feed_forward.py", "bert_pytorch/model/utils/gelu.py",
         "bert_pytorch/model/utils/layer_norm.py", "bert_pytorch/model/utils/sublayer.py",
         "bert_pytorch/trainer/__init__.py", "bert_pytorch/trainer/optim_schedule.py",
         "bert_pytorch/trainer/pretrain.py"],
        ["bert_pytorch.dataset.vocab:build", "-c", "corpus.txt", "-o", "vocab.pkl"],
        "BERT pretraining (masked LM + next sentence) through its console scripts: "
        "vocabulary, then 2 epochs with a warm-up schedule and a saved model",
        vocab=20,
        prepare="sentence_pairs",
        then=[["bert_pytorch.__main__:train", "-c", "corpus.txt", "-v", "vocab.pkl", "-o",
               "bert.model", "-hs", "16", "-l", "2", "-a", "2", "-s", "12", "-b", "8",
               "-e", "2", "-w", "0", "--with_cuda", "", "--log_freq", "2"]],
        loss_re=r"'loss': ([0-9.]+)",
        same_re=r"^Total Parameters: \d+$",
    ),
    Program(
        "BERT-pytorch BERTLM",
        "codertimo/BERT-pytorch",
        ["bert_pytorch/__init__.py", "bert_pytorch/__main__.py",
         "bert_pytorch/dataset/__init__.py", "bert_pytorch/dataset/dataset.py",
         "bert_pytorch/dataset/vocab.py", "bert_pytorch/model/__init__.py",
         "bert_pytorch/model/attention/__init__.py", "bert_pytorch/model/attention/multi_head.py",
         "bert_pytorch/model/attention/single.py", "bert_pytorch/model/bert.py",
         "bert_pytorch/model/embedding/__init__.py", "bert_pytorch/model/embedding/bert.py",
         "bert_pytorch/model/embedding/position.py", "bert_pytorch/model/embedding/segment.py",
         "bert_pytorch/model/embedding/token.py", "bert_pytorch/model/language_model.py",
         "bert_pytorch/model/transformer.py", "bert_pytorch/model/utils/__init__.py",
         "bert_pytorch/model/utils/feed_forward.py", "bert_pytorch/model/utils/gelu.py",
         "bert_pytorch/model/utils/layer_norm.py", "bert_pytorch/model/utils/sublayer.py",
         "bert_pytorch/trainer/__init__.py", "bert_pytorch/trainer/optim_schedule.py",
         "bert_pytorch/trainer/pretrain.py"],
        [],
        "BERT with masked-LM and next-sentence heads from torch's weights: both outputs, "
        "the trainer's NLLLoss(ignore_index=0) losses, gradients",
        vocab=30,
        driver="bert",
    ),
    Program(
        "mamba-minimal Mamba",
        "johnma2006/mamba-minimal",
        ["model.py"],
        [],
        "Mamba (selective state-space scan, depthwise causal Conv1d, RMSNorm, einops) from "
        "torch's weights: logits, loss, gradients",
        vocab=50,
        driver="mamba",
    ),
    Program(
        "perceiver-pytorch Perceiver + PerceiverIO",
        "lucidrains/perceiver-pytorch",
        ["perceiver_pytorch/__init__.py", "perceiver_pytorch/perceiver_pytorch.py",
         "perceiver_pytorch/perceiver_io.py"],
        [],
        "Perceiver (Fourier position encoding, latent cross-attention) and PerceiverIO "
        "(masked inputs, decoder queries) from torch's weights",
        vocab=5,
        driver="perceiver",
    ),
    Program(
        "linformer LinformerLM",
        "lucidrains/linformer",
        ["linformer/__init__.py", "linformer/linformer.py", "linformer/reversible.py"],
        [],
        "Linformer language model (keys and values projected to k along the sequence) from "
        "torch's weights",
        vocab=40,
        driver="linformer",
    ),
    Program(
        "conformer Conformer + CTC",
        "sooftware/conformer",
        ["conformer/__init__.py", "conformer/activation.py", "conformer/attention.py",
         "conformer/convolution.py", "conformer/embedding.py", "conformer/encoder.py",
         "conformer/feed_forward.py", "conformer/model.py", "conformer/modules.py"],
        [],
        "speech Conformer (conv subsampling, relative multi-head attention, GLU/depthwise "
        "conv module) with nn.CTCLoss, from torch's weights",
        vocab=10,
        driver="conformer",
    ),
    Program(
        "Informer2020 Informer",
        "zhouhaoyi/Informer2020",
        ["models/__init__.py", "models/attn.py", "models/decoder.py", "models/embed.py",
         "models/encoder.py", "models/model.py", "utils/__init__.py", "utils/masking.py"],
        [],
        "Informer time-series forecaster: full attention from torch's weights; ProbSparse "
        "attention and distilling convolutions run",
        vocab=3,
        driver="informer",
    ),
    Program(
        "Diffusion-Models-pytorch UNet",
        "dome272/Diffusion-Models-pytorch",
        ["modules.py"],
        [],
        "DDPM U-Net (sinusoidal time embedding, GroupNorm double convs, nn.MultiheadAttention "
        "self-attention at 3 scales) on a 64x64 image, from torch's weights",
        vocab=3,
        driver="diffusion_unet",
    ),
]  # fmt: skip

NOT_RUN = {
    "kimiyoung/transformer-xl pytorch/mem_transformer.py": "utils/proj_adaptive_softmax.py "
    "reads int(torch.version.cuda.split('.')[0]) at import: it needs a CUDA build of torch "
    "(a CPU torch fails the same way, torch.version.cuda is None)",
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


def _copy_program(prog: Program, gitdir: str, work: Path, lib: str) -> tuple[str, int]:
    """The program's files (and its driver) in ``work``, imports swapped for tinyattn."""
    commit = _git(gitdir, "rev-parse", "HEAD").decode().strip()
    sources = {f: _git(gitdir, "show", f"HEAD:{f}").decode() for f in prog.files}
    if prog.driver:
        sources["_drive.py"] = driver_source(prog.driver)
    swaps = 0
    for f, src in sources.items():
        if f in prog.constants:
            src = _rewrite_constants(src, prog.constants[f])
        if lib == "tinyattn":
            src, n = swap_imports(src)
            swaps += n if f != "_drive.py" else 0
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        (work / f).write_text(src)
    return commit, swaps


def _copy_data(prog: Program, mirrors: str, work: Path) -> None:
    for repo, path, dest in prog.data_from:
        gitdir = os.path.join(mirrors, repo.replace("/", "+"), "repo")
        (work / dest).parent.mkdir(parents=True, exist_ok=True)
        (work / dest).write_bytes(_git(gitdir, "show", f"HEAD:{path}"))
    if prog.prepare:
        PREPARE[prog.prepare](work)


def _command(argv: list[str]) -> list[str]:
    """``script.py args`` runs the script; ``package.module:function args`` runs a console
    script's entry point, as the launcher pip writes for it does."""
    if ":" in argv[0] and not argv[0].endswith(".py"):
        mod, fn = argv[0].split(":")
        code = f"import sys; from {mod} import {fn}; sys.exit({fn}())"
        return [sys.executable, "-c", code, *argv[1:]]
    return [sys.executable, argv[0], *argv[1:]]


def _run_commands(prog: Program, work: Path, env: dict, timeout: int) -> tuple[list[str], object]:
    outputs: list[str] = []
    code: object = 0
    for argv in [["_drive.py"] if prog.driver else prog.argv, *prog.then]:
        try:
            p = subprocess.run(
                _command(argv),
                cwd=work / prog.cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            outputs.append(p.stdout + p.stderr)
            code = p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            outputs.append(out.decode() if isinstance(out, bytes) else out)
            code = "timeout"
        if code != 0:
            break
    return outputs, code


def run_one(prog: Program, mirrors: str, lib: str, timeout: int, shared: str = "") -> dict:
    gitdir = os.path.join(mirrors, prog.repo.replace("/", "+"), "repo")
    work = Path(tempfile.mkdtemp(prefix=f"public-{lib}-"))
    commit, swaps = _copy_program(prog, gitdir, work, lib)
    _copy_data(prog, mirrors, work)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{work}", PYTHONUNBUFFERED="1")
    env["OMP_NUM_THREADS"] = "1"
    env["PUBLIC_SHARED"] = shared or str(work)
    outputs, code = _run_commands(prog, work, env, timeout)
    out = "\n".join(outputs)
    losses = [float(x) for x in re.findall(prog.loss_re, out, flags=re.M)]
    err = next(
        (ln for ln in reversed(out.strip().splitlines()) if re.match(r"\w*(Error|Exception)", ln)),
        "",
    )
    same = re.findall(prog.same_re, out, flags=re.M) if prog.same_re else []
    shutil.rmtree(work, ignore_errors=True)
    return {
        "commit": commit, "lib": lib, "exit": code, "swapped": swaps, "losses": losses,
        "decreased": len(losses) >= 2 and losses[-1] < losses[0], "error": err, "same": same,
    }  # fmt: skip


def compare_observations(shared: str) -> dict:
    """How far the tinyattn run's observations are from torch's.

    Each observation's difference is measured against its own scale, ``max |a - t| /
    max(|t|)``; an observation whose torch values are all below 1e-3 of the largest
    observation of the run (a gradient that is zero in exact arithmetic, such as a key
    projection's bias under softmax) is measured against that largest scale instead, so
    rounding noise is not reported as a relative error. ``{"n", "max_rel", "worst",
    "missing": names one run lacks, "shape": names whose shapes differ}``."""
    tp, ap = Path(shared, "torch.npz"), Path(shared, "tinyattn.npz")
    if not (tp.exists() and ap.exists()):
        return {}
    t, a = np.load(tp), np.load(ap)
    res: dict = {"n": 0, "max_rel": 0.0, "worst": "", "shape": [],
                 "missing": sorted(set(t.files) ^ set(a.files))}  # fmt: skip
    keys = [k for k in sorted(set(t.files) & set(a.files)) if not k.startswith("loose.")]
    res["shape"] = [k for k in sorted(set(t.files) & set(a.files)) if t[k].shape != a[k].shape]
    keys = [k for k in keys if k not in res["shape"]]
    scale = {k: float(np.max(np.abs(t[k].astype(np.float64)), initial=0.0)) for k in keys}
    top = max(scale.values(), default=1.0)
    for k in keys:
        diff = np.max(np.abs(t[k].astype(np.float64) - a[k].astype(np.float64)), initial=0.0)
        rel = float(diff / max(scale[k], 1e-3 * top, 1e-12))
        res["n"] += 1
        if not rel <= 1e-3:
            res.setdefault("off", []).append(f"{k} {rel:.1e}")
        if not rel <= res["max_rel"]:  # NaN counts as worst
            res["max_rel"], res["worst"] = rel, k
    return res


def summary(prog: Program, r: dict) -> str:
    if r["exit"] != 0:
        return f"fails: `{r['error'] or r['exit']}`"
    ls = r["losses"]
    if prog.driver:
        return "runs"
    if not ls:
        return "runs; no loss printed"
    return (
        f"runs; {len(ls)} losses {ls[0]:.3f} -> {ls[-1]:.3f} "
        f"({'decreased' if r['decreased'] else 'did not decrease'}; ln(vocab) = {math.log(prog.vocab):.3f})"
    )


def agreement(prog: Program, res: dict) -> str:
    """What was compared with torch, and how closely it agrees."""
    t, a = res.get("torch"), res.get("tinyattn")
    if not (t and a) or t["exit"] != 0 or a["exit"] != 0:
        return "-"
    notes = []
    if prog.same_re:
        ok = t["same"] == a["same"] and t["same"]
        notes.append(f"{len(t['same'])} printed lines {'equal' if ok else 'DIFFER'}")
    c = res.get("compare")
    if c:
        bad = c["missing"] + c["shape"]
        notes.append(
            f"{c['n']} outputs/gradients from torch's weights: max rel. diff {c['max_rel']:.1e}"
            + (f" ({c['worst']})" if c["worst"] else "")
            + (f"; MISSING/SHAPE {bad}" if bad else "")
        )
    return "; ".join(notes) or "-"


def run_program(prog: Program, args: argparse.Namespace) -> dict:
    shared = tempfile.mkdtemp(prefix="public-shared-")
    res: dict = {
        lib: run_one(prog, args.mirrors, lib, args.timeout, shared) for lib in args.libs.split(",")
    }
    if prog.driver:
        res["compare"] = compare_observations(shared)
        for line in res["compare"].get("off", []):
            print(f"  differs from torch: {line}")
    shutil.rmtree(shared, ignore_errors=True)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--only", default="", help="run programs whose name contains this")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument(
        "--libs", default="torch,tinyattn", help="torch first: drivers share its weights"
    )
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    libs = args.libs.split(",")
    rows = []
    for prog in PROGRAMS:
        if args.only and args.only not in prog.name:
            continue
        if not os.path.isdir(os.path.join(args.mirrors, prog.repo.replace("/", "+"), "repo")):
            print(f"{prog.name}: skipped, {prog.repo} is not fetched under {args.mirrors}")
            continue
        results = run_program(prog, args)
        for lib in libs:
            r = results[lib]
            print(f"{prog.name} [{lib}] exit={r['exit']} swapped={r['swapped']} "
                  f"losses={r['losses'][:3]}...{r['losses'][-2:]} error={r['error']!r}", flush=True)  # fmt: skip
        print(f"{prog.name}: {agreement(prog, results)}", flush=True)
        rows.append((prog, results))
    if args.markdown:
        print(
            "\n| program | commit | what runs | torch | tinyattn (imports swapped) | compared with torch |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        for prog, res in rows:
            t, a = res.get("torch"), res.get("tinyattn")
            commit = (t or a)["commit"][:10]
            how = f"driver `{prog.driver}`" if prog.driver else f"`{' '.join(prog.argv)}`"
            print(f"| {prog.repo}: {prog.name} | `{commit}` | {prog.what}; {how} "
                  f"| {summary(prog, t) if t else '-'} | {summary(prog, a) if a else '-'} "
                  f"| {agreement(prog, res)} |")  # fmt: skip
        for name, why in NOT_RUN.items():
            print(f"| {name} | | not run: {why} | | | |")
    for lib in libs:
        ok = sum(res[lib]["exit"] == 0 for _, res in rows)
        print(f"{ok}/{len(rows)} programs run under {lib}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
