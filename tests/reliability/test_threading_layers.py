"""Kernels called from several Python threads, under each numba threading layer.

numba's ``workqueue`` layer aborts the process when two parallel launches
overlap; ``tinyattn.kernels._threads.kernel_launch`` serialises launches there.
Each layer runs in its own subprocess (the layer is fixed per process).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = r"""
import sys, threading
import numpy as np
from tinyattn import kernels
from tinyattn.kernels import _threads

if sys.argv[1] == "nolock":  # the control: what happens without the launch lock
    _threads.needs_lock = lambda: False
rng = np.random.default_rng(0)
q, k, v, dout = (rng.standard_normal((2, 4, 96, 16)).astype(np.float32) for _ in range(4))
scores = rng.standard_normal((2, 4, 96, 96)).astype(np.float32)
try:
    kernels.softmax_rows(scores[:1, :1, :2])
except ValueError as error:  # numba: the requested layer cannot be loaded here
    print("UNAVAILABLE", str(error).replace("\n", " ")[:200])
    sys.exit(0)
import numba


def run():
    out, lse = kernels.flash_attention_forward(q, k, v, causal=True)
    grads = kernels.flash_attention_backward(dout, q, k, v, out, lse, causal=True)
    return (out, lse, *grads, kernels.softmax_rows(scores))


expected = run()
results, errors = [None] * 4, []


def work(i):
    try:
        for _ in range(6):
            results[i] = run()
    except Exception as error:
        errors.append(repr(error))


threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
same = all(all(np.array_equal(a, b) for a, b in zip(r, expected)) for r in results)
print("LAYER", numba.threading_layer(), "SAME", same, "ERRORS", len(errors), *errors)
"""


def _run(layer: str, lock: str = "lock") -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-c", _CHILD, lock], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.parametrize("layer", ["workqueue", "omp", "tbb"])
def test_kernels_from_four_threads(layer):
    result = _run(layer)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    words = result.stdout.split()
    if words[0] == "UNAVAILABLE":
        pytest.skip(f"numba threading layer {layer!r} not available: {' '.join(words[1:])}")
    assert words[:6] == ["LAYER", layer, "SAME", "True", "ERRORS", "0"], result.stdout


def test_workqueue_without_the_lock_aborts():
    """The control: the lock is what keeps workqueue alive (numba aborts on overlap)."""
    result = _run("workqueue", "nolock")
    if result.returncode == 0:
        pytest.skip("the 4 threads' launches happened not to overlap this time")
    assert "Concurrent access has been detected" in result.stderr
