"""Every torch name the public corpus uses exists in tinyattn and, if differentiable, is tested.

``api_usage.json`` (written by ``tools/api_coverage.py``) lists, per public program,
the torch names it uses. For each name:

* ``test_name_exists[name]``: the name resolves in tinyattn (``torch.X`` ->
  ``tinyattn.X``, ``Tensor.m`` -> ``tinyattn.Tensor.m``);
* ``test_keyword_is_accepted[name-keyword]``: every keyword argument a program passes
  to a torch name (``F.softmax(x, dim=-1)``, ``nn.Linear(.., bias=False)``) is a
  parameter of tinyattn's callable (skipped when its signature has ``**kwargs``);
* ``test_differentiable_name_is_gradchecked_and_parity_tested[name]``: run after
  every other test (``tests/conftest.py``), it calls the name on float64 inputs that
  require grad (``probes.py``); when the output has a graph, every ``Function`` class
  in it must be in the harness's gradcheck and torch-parity records.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tools"))

import api_coverage  # noqa: E402
import probes  # noqa: E402
from harness import GRADCHECKED, PARITY, torch  # noqa: E402

USAGE = json.loads((HERE / "api_usage.json").read_text())
MANIFEST = json.loads((HERE / "manifest.json").read_text())
NAMES = sorted({n for p in USAGE["programs"] for n in p["names"]})
PROBED = [n for n in NAMES if probes.has_probe(n)]
KEYWORDS = sorted(
    {(n, k) for p in USAGE["programs"] for n, ks in p.get("keywords", {}).items() for k in ks}
)


def test_corpus_records_are_complete():
    progs = USAGE["programs"]
    assert len(progs) >= 12
    assert len({p["repo"] for p in progs}) >= 10
    for p in progs:
        assert re.fullmatch(r"[0-9a-f]{40}", p["commit"]), p
        assert p["names"] == sorted(set(p["names"])) and p["names"], p["path"]
        assert not set(p["names"]) & set(p.get("excluded", [])), p["path"]
        assert set(p.get("keywords", {})) <= set(p["names"]), p["path"]
    listed = {(p["repo"], p["path"]) for p in MANIFEST["programs"]}
    assert {(p["repo"], p["path"]) for p in progs} == listed


def test_scanner_follows_imports_and_aliases():
    pytest.importorskip("torch", reason="the scanner reads torch.Tensor's method names")
    src = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim as O
from torch.utils.data import DataLoader as DL
from torch.nn import functional
import torch.onnx
from einops import rearrange

class M(nn.Module):
    def forward(self, x):
        y = F.softmax(x.view(2, -1), dim=-1) + functional.gelu(x).sum()
        z = torch.nn.init.normal_(torch.empty(3))
        words = "a b".split()
        parts = line.split(",")
        heads = y.split(4, dim=1)
        weights = {"a": y}.values()
        return rearrange(y.T, "a b -> b a"), x.shape, self.parameters()

opt = O.AdamW(M().parameters(), lr=1e-3)
for xb in DL([1, 2], batch_size=1):
    opt.step()
torch.onnx.export(M(), None, "m.onnx")
"""
    names, excluded = api_coverage.scan_sources([src])
    expected = {
        "torch.nn.Module", "torch.nn.functional.softmax", "torch.nn.functional.gelu",
        "torch.nn.init.normal_", "torch.empty", "torch.optim.AdamW",
        "torch.utils.data.DataLoader", "torch.onnx", "einops.rearrange", "Tensor.view",
        "Tensor.sum", "Tensor.split", "Tensor.T", "Tensor.shape",
        "torch.nn.Module.parameters", "torch.optim.Optimizer.step",
        "torch.nn", "torch.nn.functional",  # imported modules must import
    }  # fmt: skip
    assert names == expected
    assert excluded == {"torch.onnx.export"}


def test_d2l_chapter_blocks_are_pytorch_only():
    pytest.importorskip("torch", reason="the scanner reads torch.Tensor's method names")
    md = (
        "```{.python .input}\n%%tab mxnet\nfrom mxnet import np\nnp.zeros(1)\n```\n"
        "```{.python .input}\n%%tab pytorch\nimport torch\ntorch.zeros(1)\n```\n"
        "```{.python .input}\n%%tab all\ntorch.ones(1)\n```\n"
    )
    blocks = api_coverage.python_sources("x.md", md)
    names, _ = api_coverage.scan_sources(blocks)
    assert names == {"torch.zeros", "torch.ones"}


def test_scanner_records_keyword_names_of_torch_calls():
    pytest.importorskip("torch", reason="the scanner reads torch.Tensor's method names")
    src = """
import torch
import torch.nn as nn
from torch.nn.functional import softmax
x = torch.zeros(size=(3, 4), dtype=torch.float32)
y = softmax(x, dim=0).split(split_size=2, dim=1)
lin = nn.Linear(3, 4, bias=False, **extra)
words = "a b".split(sep=" ")
names.sort(key=len)
major = torch.version.cuda.split(".")[0]
"""
    assert api_coverage.scan_keywords([src]) == {
        "torch.zeros": {"size", "dtype"},
        "torch.nn.functional.softmax": {"dim"},
        "Tensor.split": {"split_size", "dim"},
        "torch.nn.Linear": {"bias"},
    }
    names, _ = api_coverage.scan_sources([src])
    assert "torch.version.cuda" in names and "torch.version.cuda.split" not in names


def test_keyword_check_reads_signatures():
    def f(a, /, b, *, c=1): ...

    def g(a, **kw): ...

    class C:
        def __init__(self, size): ...

    ok = api_coverage.accepts_keyword
    assert (ok(f, "a"), ok(f, "b"), ok(f, "c"), ok(f, "d")) == (False, True, True, False)
    assert ok(g, "anything") is None and ok(C, "size") and ok(C, "shape") is False


@pytest.mark.parametrize(("name", "keyword"), KEYWORDS)
def test_keyword_is_accepted(name, keyword):
    try:
        obj = api_coverage.resolve(name)
    except Exception:
        pytest.skip(f"{name} is missing (test_name_exists fails for it)")
    verdict = api_coverage.accepts_keyword(obj, keyword)
    if verdict is None:
        pytest.skip(
            f"{api_coverage.tinyattn_target(name)} takes **kwargs: its signature cannot tell"
        )
    assert verdict, f"{api_coverage.tinyattn_target(name)} has no parameter {keyword!r}"


@pytest.mark.parametrize("name", NAMES)
def test_name_exists(name):
    try:
        api_coverage.resolve(name)
    except Exception as e:
        pytest.fail(f"{name} -> {api_coverage.tinyattn_target(name)} is missing: {e}")


@pytest.mark.parametrize("name", PROBED)
def test_differentiable_name_is_gradchecked_and_parity_tested(name, request):
    collected = {Path(str(item.path)).relative_to(ROOT).parts[:2] for item in request.session.items}
    if len(GRADCHECKED) < 20 or not {("tests", "ops"), ("tests", "nn")} <= collected:
        pytest.skip("run the whole suite: the registry is filled by tests/ops and tests/nn")
    try:
        api_coverage.resolve(name)
    except Exception:
        pytest.skip(f"{name} is missing (test_name_exists fails for it)")
    fns = probes.probe_functions(name)
    if not fns:
        return  # no graph for float inputs: not differentiable
    no_gradcheck = sorted(fns - GRADCHECKED)
    assert not no_gradcheck, f"{name}: Functions without a float64 gradcheck: {no_gradcheck}"
    if torch is not None:
        no_parity = sorted(fns - PARITY)
        assert not no_parity, f"{name}: Functions without a torch parity test: {no_parity}"


def test_zz_dump_registry_for_the_report():
    """With TINYATTN_REGISTRY_DUMP=FILE, save the registry for ``api_coverage.py report``."""
    path = os.environ.get("TINYATTN_REGISTRY_DUMP")
    if not path:
        pytest.skip("set TINYATTN_REGISTRY_DUMP=FILE to save the registry")
    Path(path).write_text(
        json.dumps({"gradchecked": sorted(GRADCHECKED), "parity": sorted(PARITY)}) + "\n"
    )
    assert json.loads(Path(path).read_text())["gradchecked"] == sorted(GRADCHECKED)
