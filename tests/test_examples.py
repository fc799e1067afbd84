"""Run every script in examples/ and check its values against the tutorial documents.

Each script is run twice: as a program (``python examples/<name>.py`` in a subprocess,
which must exit 0) and in-process through its ``main()``, whose returned values and
printed lines are compared with what the documents print.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tinyattn

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def load(name: str):
    """Import ``examples/<name>.py`` as a fresh module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def test_every_script_is_covered():
    assert SCRIPTS == [
        "annotated_transformer_mha.py",
        "d2l_attention.py",
        "gradient_penalty_attention.py",
        "labml_mha.py",
        "raschka_attention.py",
        "self_attention_tutorial.py",
        "torch_weights_roundtrip.py",
        "train_copy_task.py",
    ]


@pytest.mark.parametrize("name", [s for s in SCRIPTS if s != "train_copy_task.py"])
def test_script_runs_as_a_program(name):
    proc = run_script(name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


# -- d2l (seed 001) ----------------------------------------------------------------------


def test_d2l_values(capsys):
    dot_out, mlp_out, out, state = load("d2l_attention").main()
    expected = np.array([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])
    np.testing.assert_allclose(dot_out.detach().numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(mlp_out.detach().numpy(), expected, atol=1e-5)
    shapes = (tuple(out.shape), len(state), tuple(state[0].shape), len(state[1]))
    assert shapes + (tuple(state[1][0].shape),) == ((4, 7, 10), 3, (4, 7, 16), 2, (2, 4, 16))
    printed = capsys.readouterr().out
    assert "encoder output size: tinyattn.Size([7, 4, 16])" in printed
    # The printed rows are read back as numbers: whether 10 prints as "10." or "10.0000"
    # depends on the last bit of a GEMM, which differs between BLAS kernels.
    rows = [
        [float(x) for x in row.split(",")]
        for row in re.findall(r"\[\[\s*([-+0-9.e]+(?:,\s*[-+0-9.e]+){3})\]\]", printed)
    ]
    printed_outputs = [r for r in rows if np.allclose(r, [10.0, 11.0, 12.0, 13.0], atol=1e-4)]
    assert len(printed_outputs) == 2, rows  # dot_out and mlp_out


# -- Raschka (seed 002) ------------------------------------------------------------------


@pytest.mark.skipif(not HAVE_TORCH, reason="the document's numbers come from torch's RNG")
def test_raschka_prints_the_documents_context_vectors(capsys):
    wrapper_vecs, context_vecs = load("raschka_attention").main()
    assert tuple(wrapper_vecs.shape) == (2, 6, 4) and tuple(context_vecs.shape) == (2, 6, 2)
    np.testing.assert_allclose(
        wrapper_vecs.detach().numpy()[:, 0], [[-0.4519, 0.2216, 0.4772, 0.1063]] * 2, atol=5e-5
    )
    np.testing.assert_allclose(
        context_vecs.detach().numpy()[:, 0], [[0.3190, 0.4858]] * 2, atol=5e-5
    )
    printed = capsys.readouterr().out
    assert "[[[-0.4519,  0.2216,  0.4772,  0.1063]," in printed
    assert "[[[0.3190, 0.4858]," in printed


def test_raschka_runs_without_torch(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    wrapper_vecs, context_vecs = load("raschka_attention").main()
    assert tuple(wrapper_vecs.shape) == (2, 6, 4) and tuple(context_vecs.shape) == (2, 6, 2)
    assert capsys.readouterr().out.count("torch not installed") == 2


# -- The Annotated Transformer (seed 004) -------------------------------------------------


def test_annotated_transformer_prints_the_documents_sizes(capsys):
    result = load("annotated_transformer_mha").main()
    lines = capsys.readouterr().out.replace("tinyattn.Size", "torch.Size").splitlines()
    assert lines[:4] == [
        "Input size: torch.Size([1, 10, 512])",
        "Before transform query: torch.Size([1, 10, 512])",
        "After transform query: torch.Size([1, 8, 10, 64])",
        "Output size: torch.Size([1, 10, 512])",
    ]
    assert tuple(result["output"]) == (1, 10, 512)
    assert result["identical_init"] and result["distinct"]
    # self.attn is recorded after dropout: rows sum to 1 only in eval mode.
    assert not result["train_rows_sum_to_1"] and result["eval_rows_sum_to_1"]


# -- labml (seed 000) ----------------------------------------------------------------------


def test_labml_shapes_and_clear_mask_error(capsys):
    result = load("labml_mha").main()
    assert result["shapes"] == {
        "query in": (10, 32, 512),
        "query heads": (10, 32, 8, 64),
        "key heads": (10, 32, 8, 64),
        "value heads": (10, 32, 8, 64),
        "output": (10, 32, 512),
        "attn": (10, 10, 32, 8),
    }
    lo, hi = result["row_sum_range"]
    assert abs(lo - 1) < 1e-5 and abs(hi - 1) < 1e-5  # softmax(dim=1) normalises over keys
    assert result["max_future_weight"] == 0.0
    assert result["max_diff_vs_sdpa"] < 1e-5
    assert result["assert_message"] == ""  # the document's bare assert says nothing
    error = result["mask_error"]
    assert error is not None and error.startswith("MultiHeadAttention.prepare_mask")
    assert "(32, 10, 10)" in error and "(10, 32, 512)" in error
    assert result["checked_vs_original"] < 1e-6
    assert "ValueError: MultiHeadAttention.prepare_mask" in capsys.readouterr().out


@pytest.mark.parametrize(
    "mask_shape, ok",
    [
        ((10, 12, 3), True),
        ((1, 12, 1), True),
        ((10, 12, 1), True),
        ((12, 10, 3), False),
        ((3, 12, 10), False),
        ((10, 12), False),
        ((10, 12, 3, 1), False),
    ],
)
def test_labml_check_mask_shape(mask_shape, ok):
    check = load("labml_mha").check_mask_shape
    query, key = (10, 3, 16), (12, 3, 16)  # seq_q=10, seq_k=12, batch=3
    if ok:
        check(mask_shape, query, key)
    else:
        with pytest.raises(ValueError, match=re.escape(str(mask_shape))):
            check(mask_shape, query, key)


# -- self-attention tutorial (seed 003) ------------------------------------------------------


def test_self_attention_tutorial(capsys):
    result = load("self_attention_tutorial").main()
    mask = result["mask"]
    assert mask.dtype == tinyattn.bool and tuple(mask.shape) == (1, 6, 6)
    assert (mask.numpy()[0] == np.tril(np.ones((6, 6), dtype=bool))).all()
    assert result["heads_shape"] == (2, 8, 6, 8)
    weights = result["weights"].detach().numpy()
    assert weights.shape == (2, 8, 6, 6)
    assert np.abs(np.triu(weights, k=1)).max() == 0.0
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert tuple(result["out"].shape) == (2, 6, 64) and tuple(result["block_out"].shape) == (
        2,
        6,
        64,
    )
    # temperature is np.power(...) (a NumPy float64): the scores must stay float32, as in torch
    assert result["out"].dtype == tinyattn.float32
    assert result["leak_3d"] > 0.1 and result["leak_4d"] == 0.0


# -- torch <-> tinyattn weights -----------------------------------------------------------------


def test_weights_roundtrip():
    result = load("torch_weights_roundtrip").main()
    assert result["file"] == 0.0
    if not HAVE_TORCH:
        pytest.skip("torch not installed: only the file round trip ran")
    assert result["torch"]["torch_to_tinyattn"] < 1e-5
    assert result["torch"]["tinyattn_to_torch"] < 1e-5
    assert result["torch"]["changed"] > 1e-3  # the way back carried changed weights


def test_weights_roundtrip_without_torch(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    result = load("torch_weights_roundtrip").main()
    assert result == {"file": 0.0, "torch": None}
    assert "torch is not installed: skipping" in capsys.readouterr().out


# -- second order: a gradient penalty through MultiheadAttention --------------------------


def test_gradient_penalty_training_matches_torch_in_lockstep(capsys):
    result = load("gradient_penalty_attention").main()
    losses = result["losses"]
    assert len(losses) == 12 and losses[-1] < losses[0] - 0.05  # it trains
    if not HAVE_TORCH:
        pytest.skip("torch not installed: only tinyattn's run was checked")
    np.testing.assert_allclose(losses, result["torch_losses"], rtol=1e-12, atol=1e-12)
    assert result["max_param_diff"] < 1e-12


# -- copy task -----------------------------------------------------------------------------------


def test_copy_task_quick_run_lowers_the_loss():
    proc = run_script("train_copy_task.py", "--epochs", "2", "--quick", "--seed", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    losses = [float(x) for x in re.findall(r"\] 10/10 loss ([0-9.]+)", proc.stdout)]
    assert len(losses) == 2 and losses[1] < losses[0]


def test_copy_task_exits_nonzero_when_accuracy_is_below_95_percent():
    proc = run_script("train_copy_task.py", "--epochs", "1")  # far too short to learn copying
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL: exact-match accuracy" in proc.stdout
