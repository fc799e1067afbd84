"""Every public submodule of torch that a CPU build imports either imports here too or is
listed below with the reason it does not.

``torch_packages.json`` is torch's public package tree (``pkgutil.walk_packages`` over
torch, no ``_`` segment), each module with whether a CPU-only torch imports it; it is
written by ``tools/torch_signatures.py``. ``NOT_HERE`` maps a module or a whole subtree
(its prefix) to the reason tinyattn has no such module. The test fails on a torch module
that is neither importable here nor explained, and on an explanation that no longer
applies (the module imports now).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import tinyattn

MODULES = json.loads((Path(__file__).parent / "torch_packages.json").read_text())["modules"]

_QUANT = "quantization (int8 tensors, observers, fake-quant, fused quantized modules): tinyattn computes in floating point on NumPy and has no quantized tensors"
_GRAPHS = "graph capture, export and compilation (TorchScript, FX, torch.export, packaging, C++ extensions): tinyattn runs Python eagerly; tinyattn.compile returns the function"
_DIST = "multi-process and multi-device training internals; tinyattn.distributed is a single-process shim (world size 1) and nn.parallel has DataParallel/DDP stand-ins at the top level only"
_DEVICE = "GPU and accelerator device modules and backend switches: tinyattn runs on the CPU only (tinyattn.cuda, tinyattn.backends and tinyattn.accelerator answer as a CPU-only torch at the top level)"
_MISSING = "not implemented in tinyattn (a missing feature, not a design choice)"
_INTERNAL = "torch's own tooling and internals, not an API CPU model code imports"

NOT_HERE = {
    "torch.ao": _QUANT,
    "torch.quantization": _QUANT,
    "torch.nn.quantized": _QUANT,
    "torch.nn.quantizable": _QUANT,
    "torch.nn.qat": _QUANT,
    "torch.nn.intrinsic": _QUANT,
    "torch.fx": _GRAPHS,
    "torch.export": _GRAPHS,
    "torch.jit": _GRAPHS,
    "torch.package": _GRAPHS,
    "torch.compiler": _GRAPHS,
    "torch.nativert": _GRAPHS,
    "torch.library": _GRAPHS,
    "torch.onnx.": _GRAPHS + " (torch.onnx itself is a shim whose export raises)",
    "torch.utils.jit": _GRAPHS,
    "torch.utils.cpp_extension": _GRAPHS,
    "torch.utils.bundled_inputs": _GRAPHS,
    "torch.utils.mobile_optimizer": _GRAPHS,
    "torch.utils.model_dump": _GRAPHS,
    "torch.utils.backend_registration": _GRAPHS,
    "torch.nn.cpp": _GRAPHS,
    "torch.distributed.": _DIST,
    "torch.nn.parallel.": _DIST,
    "torch.multiprocessing.": _DIST + " (tinyattn.multiprocessing is Python's multiprocessing)",
    "torch.cuda.": _DEVICE,
    "torch.backends.": _DEVICE,
    "torch.accelerator.": _DEVICE,
    "torch.xpu": _DEVICE,
    "torch.mps": _DEVICE,
    "torch.mtia": _DEVICE,
    "torch.numa": _DEVICE,
    "torch.cpu": _DEVICE + "; torch.cpu's CPU-stream and amp helpers are " + _MISSING,
    "torch.nn.backends": _DEVICE,
    "torch.utils.hipify": _DEVICE,
    "torch.utils.mkldnn": _DEVICE,
    "torch.sparse.": "torch.sparse's semi-structured (2:4) sparsity: "
    + _MISSING
    + " (tinyattn.sparse has COO tensors: docs/sparse.md)",
    "torch.masked": "masked tensors: " + _MISSING,
    "torch.distributions.": "distributions other than Normal, Uniform, Bernoulli and Categorical "
    "(beta, gamma, multivariate normal ...), transforms, constraints and kl: " + _MISSING,
    "torch.signal": "torch.signal.windows: "
    + _MISSING
    + " (the windows are at the top level: tinyattn.hann_window ...)",
    "torch.testing": "torch.testing.assert_close: " + _MISSING,
    "torch.quasirandom": "SobolEngine: " + _MISSING,
    "torch.hub": "torch.hub downloads pretrained models from the network: " + _MISSING,
    "torch.utils.model_zoo": "downloads pretrained weights (torch.hub): " + _MISSING,
    "torch.futures": "futures for asynchronous RPC: " + _DIST,
    "torch.monitor": _INTERNAL,
    "torch.contrib": _INTERNAL,
    "torch.overrides": "__torch_function__ overrides: tinyattn has no dispatch to override; "
    + _MISSING,
    "torch.functional": "the module behind torch.split, torch.einsum ...: tinyattn has those names at the top level",
    "torch.return_types": "named tuples of multi-output ops: tinyattn returns its own (values, indices) named tuples",
    "torch.storage": "untyped storages: tinyattn tensors own NumPy arrays",
    "torch.types": "type aliases for annotations: " + _MISSING,
    "torch.torch_version": "the TorchVersion comparator: " + _MISSING,
    "torch.utils.data.datapipes": "DataPipes (deprecated in torch): " + _MISSING,
    "torch.utils.data.backward_compatibility": _INTERNAL,
    "torch.utils.data.graph": "DataPipe graphs: " + _MISSING,
    "torch.utils.data.graph_settings": "DataPipe graphs: " + _MISSING,
    "torch.utils.benchmark.": "tinyattn.utils.benchmark has Timer at the top level; the fuzzers, examples and C++/valgrind helpers: "
    + _INTERNAL,
    "torch.utils.backcompat": _INTERNAL,
    "torch.utils.collect_env": _INTERNAL,
    "torch.utils.cpp_backtrace": _INTERNAL,
    "torch.utils.debug_log": _INTERNAL,
    "torch.utils.file_baton": _INTERNAL,
    "torch.utils.show_pickle": _INTERNAL,
    "torch.utils.throughput_benchmark": _INTERNAL,
    "torch.utils.viz": _INTERNAL,
    "torch.utils.weak": _INTERNAL,
    "torch.utils.module_tracker": _INTERNAL,
    "torch.utils.deterministic": _INTERNAL,
    "torch.utils.serialization": _INTERNAL,
    "torch.utils.flop_counter": "FlopCounterMode (dispatch-level op counting): " + _MISSING,
    "torch.utils.hooks": "RemovableHandle and hook helpers: "
    + _MISSING
    + " as a module (modules return handles)",
    "torch.utils.dlpack": "tinyattn.from_dlpack / to_dlpack are at the top level; the module: "
    + _MISSING,
    "torch.autograd.profiler_legacy": _INTERNAL,
    "torch.autograd.profiler_util": _INTERNAL,
    "torch.autograd.variable": "Variable is tinyattn.autograd.Variable; the module: " + _MISSING,
    "torch.profiler.itt": _DEVICE,
    "torch.profiler.python_tracer": _INTERNAL,
    "torch.nn.attention.bias": "causal_lower_right / CausalBias: " + _MISSING,
    "torch.nn.attention.experimental": _INTERNAL,
    "torch.nn.attention.varlen": "variable-length attention: " + _MISSING,
    "torch.nn.utils.prune": "pruning: " + _MISSING,
    "torch.nn.utils.memory_format": "channels_last conversion of conv weights: tinyattn keeps C order",
    "torch.nn.common_types": "type aliases for annotations: " + _MISSING,
    "torch.nn.grad": "conv2d_input / conv2d_weight helpers: " + _MISSING,
    "torch.nn.modules.utils": "_pair / _triple helpers: " + _INTERNAL,
    "torch.nn.modules.linear_cross_entropy_options": _INTERNAL,
}


def _reason(name: str) -> str | None:
    """The entry for ``name``: itself with its subtree (``torch.fx``), or only the subtree
    (``torch.cuda.``: the shim ``tinyattn.cuda`` imports, its submodules need not)."""
    keys = [k for k in NOT_HERE if _covers(k, name)]
    return NOT_HERE[max(keys, key=len)] if keys else None


def _imports(name: str) -> bool:
    try:
        importlib.import_module("tinyattn" + name[len("torch") :])
    except ImportError:
        return False
    return True


def test_the_tree_is_torchs_whole_tree():
    assert len(MODULES) > 500 and "torch.nn.modules.linear" in MODULES
    assert all(not part.startswith("_") for name in MODULES for part in name.split("."))


@pytest.mark.parametrize("name", sorted(n for n, ok in MODULES.items() if ok))
def test_module_imports_or_is_explained(name):
    if _imports(name):
        return
    assert _reason(name), f"tinyattn{name[5:]} does not import and NOT_HERE gives no reason"


def test_every_explanation_covers_a_module_that_does_not_import():
    """An entry whose modules all import now (or that matches none) must go."""
    missing = {n for n, ok in MODULES.items() if ok and not _imports(n)}
    stale = [k for k in NOT_HERE if not any(_reason(n) and _covers(k, n) for n in missing)]
    assert not stale, f"NOT_HERE entries that explain nothing: {stale}"


def _covers(key: str, name: str) -> bool:
    if key.endswith("."):
        return name.startswith(key)
    return name == key or name.startswith(key + ".")


def test_devices_and_dtypes_construct_as_on_a_cpu_torch():
    """Objects a CPU-only torch constructs without using a device construct here too."""
    assert str(tinyattn.device("cpu")) == "cpu" and tinyattn.device("cpu", 0).index == 0
    assert tinyattn.device("cuda:1").type == "cuda" and tinyattn.device("cuda", 1).index == 1
    assert tinyattn.device("meta").type == "meta"
    assert tinyattn.float32.is_floating_point and not tinyattn.int64.is_floating_point
    assert tinyattn.finfo(tinyattn.float32).eps > 0 and tinyattn.iinfo(tinyattn.int8).max == 127
    assert repr(tinyattn.strided) == "tinyattn.strided"
    assert isinstance(tinyattn.contiguous_format, tinyattn.memory_format)


_REACHABLE = """
import importlib, json, sys
root = sys.argv[1]
importlib.import_module(root)
names = []
for name in sorted(sys.modules):
    parts = name.split(".")
    if parts[0] != root or any(p.startswith("_") for p in parts):
        continue
    obj = sys.modules[root]
    for part in parts[1:]:
        obj = getattr(obj, part, None)
    if obj is sys.modules[name]:
        names.append(name)
print(json.dumps(names))
"""

_RESOLVES = """
import importlib, json, sys
import tinyattn
unreachable = []
for name in json.loads(sys.stdin.read()):
    obj = tinyattn
    try:
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
    except AttributeError:
        try:
            importlib.import_module(name)  # tinyattn has it, but only after an import
        except ImportError:
            continue  # not here: test_module_imports_or_is_explained covers it
        unreachable.append(name)
print(json.dumps(unreachable))
"""


def test_submodules_reached_after_import_torch_are_reached_after_import_tinyattn():
    """``torch.autograd.function.X`` works after ``import torch``: where tinyattn has the
    module, ``tinyattn.autograd.function.X`` works after ``import tinyattn`` (fresh
    processes; torch's side is read from torch itself)."""
    import subprocess
    import sys

    pytest.importorskip("torch", reason="torch's reachable submodules are read from torch")
    run = subprocess.run
    found = run([sys.executable, "-c", _REACHABLE, "torch"], capture_output=True, text=True)
    theirs = ["tinyattn" + n[len("torch") :] for n in json.loads(found.stdout)]
    assert len(theirs) > 50, found.stderr
    checked = run(
        [sys.executable, "-c", _RESOLVES], input=json.dumps(theirs), capture_output=True, text=True
    )
    unreachable = json.loads(checked.stdout)
    assert not unreachable, f"import these in their parent packages: {unreachable}"
