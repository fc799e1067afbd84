"""NumPy meets a tensor: conversions, ufuncs, NumPy scalars, NumPy functions, as torch.

Each case is an expression over ``L`` (tinyattn or torch), ``np`` and a few operands. Its
result is reduced to (type, dtype, values) or the exception class. torch's answers are
stored in ``numpy_protocol_torch.json`` so the comparison runs without torch; with torch
installed, a second test checks that the stored answers are still torch's. Regenerate
with ``python tests/torch_surface/test_numpy_protocol.py``.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

TABLE = Path(__file__).with_name("numpy_protocol_torch.json")

CASES = [
    # convert: __array__
    "np.asarray(t)", "np.array(t)", "np.asarray(t, dtype=np.float64)",
    "np.asarray(t, dtype=np.float32)", "np.array(t, dtype=np.int64)", "np.asarray(ti)",
    "np.shares_memory(np.asarray(t), t.numpy())", "np.shares_memory(np.array(t), t.numpy())",
    "np.asarray(tr)", "np.array(tr)", "np.asarray(tr.detach())", "np.asarray(t > 0)",
    # wrap: ufuncs and NumPy's method fallbacks return tensors
    "np.sin(t)", "np.exp(ti)", "np.sin(h)", "np.sin(L.tensor(1.0))", "np.add(t, 1)",
    "np.add(arr, t)", "np.add(t, arr)", "np.maximum(t, 0)", "np.isnan(t)", "np.greater(t, 0)",
    "np.logical_not(t > 0)", "np.modf(t)", "np.matmul(t, t)", "np.add(t, 1, out=np.empty(3))",
    "np.argmax(t)", "np.reshape(t, (3, 1))", "np.transpose(m)", "np.clip(t, 0, 1)",
    "np.cumsum(t)", "np.round(t)", "np.sin(tr)", "np.add.reduce(t)",
    # plain results: NumPy functions that build a new array
    "np.concatenate([t, t])", "np.stack([t, t])", "np.where(t > 0, t, 0)", "np.sort(t)",
    "np.dot(t, t)", "np.allclose(t, t)", "np.array_equal(t, t)", "np.shape(m)",
    # NumPy's reductions call the tensor's own method with NumPy's keywords
    "np.sum(t)", "np.mean(t)", "np.max(t)", "np.sum(m, axis=0)",
    # NumPy scalars count as Python numbers
    "np.float64(2) * t", "t * np.float32(2)", "np.int64(3) + t", "np.int64(3) + ti",
    "np.float64(2) * ti", "np.float32(2) + L.tensor(1)", "np.bool_(True) + t",
    "np.complex128(1j) * t", "np.float64(2) * L.tensor(1.0)", "np.float64(2) - t",
    "np.float64(2) / t", "np.float64(2) ** t", "np.float64(2) < t", "np.float64(2) == t",
    "np.float32(2) + t.double()", "np.int64(3) * ti.int()", "np.float64(2) * h",
    "np.float64(2) * tr",
    # tensor on the left of an operator with an array
    "t + arr", "t - arr", "t * arr", "t / arr", "t ** arr", "t @ arr", "t == arr",
    "t + arr.astype(np.float32)", "t + np.array([1, 2, 3])", "t / np.array(2.0)", "t.double() + arr", "L.tensor(2.0) * np.ones(2)",
    # array on the left
    "arr + t", "arr - t", "arr * t", "arr / t", "arr < t", "arr == t", "arr != t",
    "np.array(2.0) * t", "arr + tr",
]  # fmt: skip

# Where tinyattn answers and torch raises or returns something other than an elementwise
# result. tinyattn's answer is checked against the expression on the right instead.
DIFFERENT = {
    # torch's Tensor.__radd__ (and -, *, <, ...) returns NotImplemented for an ndarray, so
    # `arr + t` raises TypeError (`arr / t` and `arr == t` happen to work). tinyattn's
    # reflected operators take the array as they take any operand.
    "arr + t": "t + arr",
    "arr - t": "-(t - arr)",
    "arr * t": "t * arr",
    "arr < t": "t > arr",
    "np.array(2.0) * t": "t * np.array(2.0)",
    # torch: `arr != t` falls back to identity and returns the Python bool True.
    "arr != t": "t != arr",
    # torch sends `t + arr` through NumPy, which refuses a tensor that requires grad;
    # tinyattn's operator keeps the array as a constant of the graph.
    "arr + tr": "tr + L.tensor(arr)",
}

ENV_SETUP = """
t = L.tensor([1.0, -2.0, 3.0])
ti = L.tensor([1, 2, 3])
h = L.tensor([1.0, -2.0, 3.0], dtype=L.float16)
m = L.ones(2, 3)
tr = L.ones(3, requires_grad=True)
arr = np.array([1.0, 2.0, 3.0])
"""


def _values(x):
    if isinstance(x, np.ndarray | np.generic) and x.dtype.kind == "c":
        x = np.stack([np.real(x), np.imag(x)], axis=-1)  # (re, im) pairs
    values = x.tolist()
    if isinstance(values, float) and math.isnan(values):
        return "nan"
    return values


def describe(result, lib) -> list:
    """A JSON-able summary: [kind, dtype, values] or ["raises", exception class name]."""
    if isinstance(result, tuple):
        return ["tuple", [describe(r, lib) for r in result]]
    if isinstance(result, lib.Tensor):
        return ["Tensor", str(result.dtype).split(".")[-1], _values(result.detach().numpy())]
    if isinstance(result, np.ndarray):
        return ["ndarray", result.dtype.name, _values(result)]
    if isinstance(result, np.generic):
        return ["numpy scalar", result.dtype.name, _values(result)]
    return [type(result).__name__, None, result]


def same(ours: list, theirs: list) -> bool:
    """Equal summaries; float values to float32 rounding (torch's ``arr / t`` goes through
    a float32 reciprocal)."""
    if ours[:2] != theirs[:2] or ours[0] == "raises":
        return ours[:2] == theirs[:2]
    if ours[0] == "tuple":
        return len(ours[1]) == len(theirs[1]) and all(map(same, ours[1], theirs[1]))
    a, b = np.asarray(ours[2], dtype=object), np.asarray(theirs[2], dtype=object)
    if a.shape != b.shape:
        return False
    if a.size and all(isinstance(v, (int, bool)) for v in a.ravel()):
        return ours[2] == theirs[2]
    return np.allclose(a.astype(float), b.astype(float), rtol=1e-6, atol=0)


def evaluate(expr: str, lib) -> list:
    env = {"L": lib, "np": np}
    exec(ENV_SETUP, env)
    try:
        return describe(eval(expr, env), lib)
    except Exception as e:  # the table records which class torch raises
        return ["raises", type(e).__name__]


def torch_table() -> dict:
    with warnings.catch_warnings():  # torch's __array__/__array_wrap__ predate NumPy 2
        warnings.simplefilter("ignore", DeprecationWarning)
        return {expr: evaluate(expr, torch) for expr in CASES}


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(TABLE.read_text())


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("expr", [c for c in CASES if c not in DIFFERENT])
def test_tinyattn_answers_as_torch(expr, stored):
    ours = evaluate(expr, tinyattn)
    assert same(ours, stored[expr]), (ours, stored[expr])


@pytest.mark.parametrize("expr", sorted(DIFFERENT))
def test_where_torch_has_no_answer_tinyattn_answers_elementwise(expr, stored):
    ours = evaluate(expr, tinyattn)
    assert ours[0] == "Tensor" and ours == evaluate(DIFFERENT[expr], tinyattn)
    assert stored[expr][0] in ("raises", "bool"), "torch answers here now: drop the difference"


@pytest.mark.skipif(torch is None, reason="checks the stored table against torch itself")
def test_the_stored_table_is_torchs(stored):
    fresh = torch_table()
    assert sorted(fresh) == sorted(stored)
    assert all(same(fresh[k], stored[k]) for k in fresh), "regenerate the table"


def test_requires_grad_is_refused_with_torchs_message():
    x = tinyattn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\)"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.exp(x)


def test_conversion_shares_memory_and_copies_on_request():
    t = tinyattn.zeros(3)
    np.asarray(t)[0] = 5.0
    assert t[0].item() == 5.0
    copied = np.array(t, copy=True)
    copied[1] = 7.0
    assert t[1].item() == 0.0
    assert np.asarray(t, copy=False) is t.numpy()


def test_copy_false_with_a_cast_is_refused():
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(tinyattn.zeros(2), dtype=np.float64, copy=False)


def test_ufunc_results_wrap_into_tensors_sharing_the_result():
    t = tinyattn.tensor([0.0, 1.0])
    out = np.exp(t)
    assert type(out) is tinyattn.Tensor and out.dtype == tinyattn.float32
    assert np.isnan(t).dtype == tinyattn.uint8  # bool results become uint8, as torch's wrap
    assert type(np.add(t, 1, out=np.empty(2))) is np.ndarray  # an explicit out= is kept
    assert type(np.exp(tinyattn.nn.Parameter(t).detach())) is tinyattn.Tensor


def test_numpy_scalars_do_not_widen_a_tensor():
    t = tinyattn.tensor([1.0], dtype=tinyattn.float16)
    assert (np.float64(2) * t).dtype == tinyattn.float16
    assert (t + np.int64(1)).dtype == tinyattn.float16
    y = np.float64(3) * tinyattn.ones(2, requires_grad=True)
    y.sum().backward()


if __name__ == "__main__":
    TABLE.write_text(json.dumps(torch_table(), indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {TABLE}")
