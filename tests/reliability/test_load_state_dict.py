"""``Module.load_state_dict`` is transactional, names keys, and follows torch's dtype rules."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn import nn

try:
    import torch
except ImportError:  # parity checks skip; the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _model():
    tinyattn.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))


def _snapshot(module):
    """Every tensor's identity, class, dtype, requires_grad, version and bytes."""
    return {
        k: (id(v), type(v), v._data.dtype, v.requires_grad, v._version.value, v._data.tobytes())
        for k, v in module.state_dict(keep_vars=True).items()
    }


def _good_state():
    return {k: v.detach() * 0 + 7 for k, v in _model().state_dict().items()}


BAD_VALUES = {
    "string-array": np.array(["a", "b"]),
    "object-array": np.array([1.0, None], dtype=object),
    "object-array-of-numbers": np.array([1.0, 2.0], dtype=object),
    "complex": np.ones(2, dtype=np.complex64),
    "datetime": np.array(["2020-01-01", "2020-01-02"], dtype="M8[D]"),
    "str": "weights",
    "none": None,
    "dict": {"a": 1},
    "ragged-list": [[1.0, 2.0], [3.0]],
    "wrong-shape": np.ones(5, dtype=np.float32),
}


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
@pytest.mark.parametrize("assign", [False, True])
@pytest.mark.parametrize("strict", [True, False])
def test_a_bad_value_leaves_the_module_unchanged_and_names_the_key(name, assign, strict):
    model = _model()
    before = _snapshot(model)
    state = _good_state()
    state["2.bias"] = BAD_VALUES[name]  # the last key: every earlier key was loadable
    with pytest.raises(RuntimeError, match=r"2\.bias") as info:
        model.load_state_dict(state, strict=strict, assign=assign)
    assert "Error(s) in loading state_dict for Sequential" in str(info.value)
    assert _snapshot(model) == before


def test_every_problem_is_reported_at_once():
    model = _model()
    state = _good_state()
    state["0.weight"] = np.array(["x"] * 12).reshape(4, 3)
    state["1.bias"] = np.ones(3)
    del state["2.weight"]
    state["extra"] = tinyattn.ones(1)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    msg = str(info.value)
    for part in (
        'Missing key(s) in state_dict: "2.weight"',
        'Unexpected key(s) in state_dict: "extra"',
        "0.weight",
        "size mismatch for 1.bias",
    ):
        assert part in msg, msg


def test_object_array_does_not_load_as_nan():
    m = nn.Linear(2, 1)
    with pytest.raises(RuntimeError, match=r'"weight".*dtype object'):
        m.load_state_dict({"weight": np.array([[1.0, None]], dtype=object), "bias": np.zeros(1)})
    assert np.isfinite(m.weight._data).all()


def test_successful_load_copies_values_in_the_existing_dtype_and_objects():
    model = _model()
    ids = {k: id(v) for k, v in model.state_dict(keep_vars=True).items()}
    state = {k: np.full(v.shape, 2.5, dtype=np.float64) for k, v in model.state_dict().items()}
    out = model.load_state_dict(state)
    assert repr(out) == "<All keys matched successfully>"
    for k, v in model.state_dict(keep_vars=True).items():
        assert id(v) == ids[k] and v.dtype == tinyattn.float32 and isinstance(v, nn.Parameter)
        assert (v._data == 2.5).all() and v.requires_grad
    state["0.bias"][0] = 99.0
    assert model[0].bias._data[0] == 2.5  # copied, not aliased


@pytest.mark.parametrize("bad", [None, [1, 2], "state", 3])
def test_non_mapping_state_dict_is_refused_like_torch(bad):
    with pytest.raises(TypeError) as info:
        nn.Linear(2, 1).load_state_dict(bad)
    assert str(info.value) == f"Expected state_dict to be dict-like, got {type(bad)}."
    if torch is not None:
        with pytest.raises(TypeError) as tinfo:
            torch.nn.Linear(2, 1).load_state_dict(bad)
        assert str(tinfo.value) == str(info.value)


# -- dtype rules, against torch --------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("src", ["float64", "float16", "int64", "bool"])
def test_copy_converts_into_the_parameter_dtype_like_torch(src):
    values = np.array([[1.7, -2.5, 0.0], [3.2, -0.6, 1.0]])
    ta, tt = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    w = values.astype(src)
    ta.load_state_dict({"weight": tinyattn.tensor(w), "bias": tinyattn.zeros(2)})
    tt.load_state_dict({"weight": torch.tensor(w), "bias": torch.zeros(2)})
    assert ta.weight.dtype == tinyattn.float32 and tt.weight.dtype == torch.float32
    np.testing.assert_array_equal(ta.weight.detach().numpy(), tt.weight.detach().numpy())


@needs_torch
def test_float_into_int_buffer_truncates_like_torch():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", tinyattn.zeros(3, dtype=tinyattn.int64))

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(3, dtype=torch.int64))

    vals = [1.7, -2.5, 3.0]
    m, t = M(), T()
    m.load_state_dict({"n": tinyattn.tensor(vals)})
    t.load_state_dict({"n": torch.tensor(vals)})
    assert m.n.tolist() == t.n.tolist() == [1, -2, 3]
    m.load_state_dict({"n": tinyattn.tensor(vals, dtype=tinyattn.float64)}, assign=True)
    t.load_state_dict({"n": torch.tensor(vals, dtype=torch.float64)}, assign=True)
    assert m.n.dtype == tinyattn.float64 and t.n.dtype == torch.float64


# -- assign=True ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("kind", ["tensor", "parameter", "parameter-frozen"])
def test_assign_replaces_parameters_like_torch(frozen, kind):
    results = []
    for L in (tinyattn, torch):
        m = L.nn.Linear(3, 2)
        m.weight.requires_grad_(not frozen)
        w = L.ones(2, 3, dtype=L.float64)
        if kind == "parameter":
            w = L.nn.Parameter(w)
        elif kind == "parameter-frozen":
            w = L.nn.Parameter(w, requires_grad=False)
        old = m.weight
        m.load_state_dict({"weight": w, "bias": L.zeros(2)}, assign=True)
        results.append(
            (
                type(m.weight).__name__,
                str(m.weight.dtype).split(".")[-1],
                m.weight.requires_grad,
                m.weight is old,
                m.weight is w,
                m.weight.is_leaf,
            )
        )
        # shares memory with the loaded tensor, as torch
        if L is torch:
            w.data[0, 0] = 5.0
        else:
            w._data[0, 0] = 5.0
        assert float(m.weight.detach()[0, 0]) == 5.0
    assert results[0] == results[1], results


@needs_torch
def test_assign_replaces_buffers_and_keeps_the_loaded_dtype_like_torch():
    results = []
    for L in (tinyattn, torch):

        class M(L.nn.Module):
            def __init__(self, lib=L):
                super().__init__()
                self.register_buffer("mask", lib.zeros(2))

        m = M()
        new = L.ones(2, dtype=L.float64)
        m.load_state_dict({"mask": new}, assign=True)
        results.append((m.mask is new, str(m.mask.dtype).split(".")[-1], type(m.mask).__name__))
    assert results[0] == results[1]


def test_assign_refuses_a_wrong_shape_and_an_int_value_for_a_trained_parameter():
    m = nn.Linear(3, 2)
    before = _snapshot(m)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict({"weight": tinyattn.ones(4, 3), "bias": tinyattn.zeros(2)}, assign=True)
    with pytest.raises(RuntimeError, match=r'"weight".*requires grad.*int64'):
        m.load_state_dict(
            {"weight": tinyattn.ones(2, 3, dtype=tinyattn.int64), "bias": tinyattn.zeros(2)},
            assign=True,
        )
    with pytest.raises(RuntimeError, match=r'"bias".*uint16'):
        m.load_state_dict(
            {"weight": tinyattn.ones(2, 3), "bias": np.zeros(2, np.uint16)}, assign=True
        )
    assert _snapshot(m) == before


def test_assign_from_numpy_copies_the_memory():
    m = nn.Linear(3, 2)
    w = np.ones((2, 3), dtype=np.float32)
    m.load_state_dict({"weight": w, "bias": np.zeros(2, np.float32)}, assign=True)
    w[0, 0] = 9
    assert (
        m.weight._data[0, 0] == 1 and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    )


# -- LazyLinear -----------------------------------------------------------------------------
def test_lazy_linear_takes_its_own_dtype_not_the_checkpoints():
    lazy = nn.LazyLinear(2)
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    lazy.load_state_dict({"weight": w, "bias": np.zeros(2)})
    assert lazy.weight.dtype == tinyattn.float32 and lazy.bias.dtype == tinyattn.float32
    np.testing.assert_array_equal(lazy.weight._data, w.astype(np.float32))
    out = lazy(tinyattn.ones(1, 3))
    assert out.tolist() == [[3.0, 12.0]] and type(lazy) is nn.Linear and lazy.in_features == 3
    lazy64 = nn.LazyLinear(2, dtype=tinyattn.float64)
    lazy64.load_state_dict({"weight": w.astype(np.float32), "bias": np.zeros(2)})
    assert lazy64.weight.dtype == tinyattn.float64


@needs_torch
def test_lazy_linear_dtype_matches_torch():
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = torch.nn.LazyLinear(2)
    t.load_state_dict({"weight": torch.tensor(w), "bias": torch.zeros(2, dtype=torch.float64)})
    lazy = nn.LazyLinear(2)
    lazy.load_state_dict({"weight": w, "bias": np.zeros(2)})
    assert str(t.weight.dtype).split(".")[-1] == str(lazy.weight.dtype).split(".")[-1]


@pytest.mark.parametrize(
    "state",
    [
        {"weight": np.ones((2, 3))},  # bias missing (strict)
        {"weight": np.ones((2, 3)), "bias": np.zeros(5)},  # bias of the wrong size
        {"weight": np.ones((4, 3)), "bias": np.zeros(2)},  # out_features mismatch
        {"weight": np.ones(6), "bias": np.zeros(2)},  # not 2-D
        {"weight": np.ones((2, 3)), "bias": np.array(["a", "b"])},
    ],
    ids=["missing-bias", "bias-size", "out-features", "weight-1d", "bias-strings"],
)
def test_failed_lazy_load_leaves_the_layer_uninitialised(state):
    lazy = nn.LazyLinear(2)
    with pytest.raises(RuntimeError, match="LazyLinear"):
        lazy.load_state_dict(state)
    assert lazy.has_uninitialized_params()
    assert all(isinstance(p, nn.UninitializedParameter) for p in lazy._parameters.values())
    out = lazy(tinyattn.ones(1, 7))  # still usable: materialises from the input
    assert out.shape == (1, 2) and lazy.weight.shape == (2, 7)


def test_lazy_linear_assign():
    lazy = nn.LazyLinear(2)
    w = tinyattn.ones(2, 3, dtype=tinyattn.float64)
    lazy.load_state_dict(
        {"weight": w, "bias": tinyattn.zeros(2, dtype=tinyattn.float64)}, assign=True
    )
    assert not lazy.has_uninitialized_params() and lazy.weight.dtype == tinyattn.float64
    assert isinstance(lazy.weight, nn.Parameter) and lazy.weight.requires_grad
    assert lazy(tinyattn.ones(1, 3, dtype=tinyattn.float64)).tolist() == [[3.0, 3.0]]


def test_zero_dim_parameter_accepts_a_one_element_value_like_torch():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(tinyattn.tensor(1.0))

    m = M()
    m.load_state_dict({"scale": np.array([3.0])})
    assert m.scale.shape == () and m.scale.item() == 3.0
