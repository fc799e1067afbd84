"""The small torch names public programs use: Tensor.new_*, pinning, the
accelerator/cuda/onnx/multiprocessing shims, safe_globals, deprecated nn.init spellings,
meshgrid. Each compared with what the installed (CPU-only) torch does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_new_family_matches_torch(dtype):
    x = tinyattn.zeros(2, dtype=getattr(tinyattn, dtype))
    tx = torch.zeros(2, dtype=getattr(torch, dtype))
    cases = [
        ("new_zeros", (3, 2), {}),
        ("new_zeros", ((3, 2),), {}),
        ("new_ones", (4,), {}),
        ("new_ones", (2,), {"dtype": "float64"}),
        ("new_full", ((2, 2), 7), {}),
        ("new_tensor", ([1, 2, 3],), {}),
        ("new_empty", (2, 3), {}),
    ]
    for name, args, kw in cases:
        kw_t = {k: getattr(tinyattn, v) for k, v in kw.items()}
        kw_p = {k: getattr(torch, v) for k, v in kw.items()}
        a = getattr(x, name)(*args, **kw_t)
        b = getattr(tx, name)(*args, **kw_p)
        assert list(a.shape) == list(b.shape), name
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], name
        if name != "new_empty":
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.is_leaf and not a.requires_grad
    if dtype != "int64":
        assert x.new_zeros(2, requires_grad=True).requires_grad


def test_new_family_bad_input():
    x = tinyattn.zeros(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        x.new_zeros(-1)
    with pytest.raises(TypeError, match="fill_value"):
        x.new_full((2,), "a")


def test_pin_memory_is_refused_as_on_cpu_only_torch():
    with pytest.raises(RuntimeError):
        torch.zeros(2).pin_memory()
    with pytest.raises(RuntimeError, match="pin_memory"):
        tinyattn.zeros(2).pin_memory()
    assert tinyattn.zeros(2).is_pinned() is torch.zeros(2).is_pinned() is False


def test_accelerator_and_cuda_answers_match_torch_cpu_build():
    assert tinyattn.accelerator.is_available() == torch.accelerator.is_available()
    assert tinyattn.accelerator.current_accelerator() == torch.accelerator.current_accelerator()
    assert tinyattn.cuda.empty_cache() is None and torch.cuda.empty_cache() is None
    tinyattn.cuda.set_device(-1)  # torch: a no-op
    torch.cuda.set_device(-1)
    with pytest.raises(ValueError, match="cuda device"):
        tinyattn.cuda.set_device("cpu")
    with pytest.raises(ValueError):
        torch.cuda.set_device("cpu")
    with pytest.raises(RuntimeError, match="CPU only"):
        tinyattn.cuda.set_device(0)
    with pytest.raises(RuntimeError, match="CPU only"):
        tinyattn.cuda.set_device("cuda:1")
    with pytest.raises(TypeError, match="device"):
        tinyattn.cuda.set_device(1.5)


def test_multiprocessing_is_the_stdlib_module():
    import multiprocessing

    assert tinyattn.multiprocessing.Process is multiprocessing.Process
    assert tinyattn.multiprocessing.get_sharing_strategy() == "file_system"
    with pytest.raises(ValueError, match="new_strategy"):
        tinyattn.multiprocessing.set_sharing_strategy("nope")


def test_onnx_export_raises_clearly():
    with pytest.raises(NotImplementedError, match="ONNX"):
        tinyattn.onnx.export(tinyattn.nn.Linear(2, 2), (tinyattn.zeros(1, 2),), "m.onnx")


def test_safe_globals_records_and_restores(tmp_path):
    from tinyattn import serialization as S

    S.clear_safe_globals()
    S.add_safe_globals([dict])
    with S.safe_globals([list]) as ctx:
        assert S.get_safe_globals() == [dict, list]
        path = tmp_path / "x.pt"
        tinyattn.save({"w": tinyattn.ones(2)}, path)
        assert tinyattn.load(path, weights_only=True)["w"].tolist() == [1.0, 1.0]
    assert ctx.safe_globals == [list]
    assert S.get_safe_globals() == [dict]
    S.clear_safe_globals()
    with pytest.raises(TypeError, match="safe_globals"):
        S.add_safe_globals(dict)


@pytest.mark.parametrize(
    "name",
    [
        "uniform",
        "normal",
        "constant",
        "xavier_uniform",
        "xavier_normal",
        "kaiming_uniform",
        "kaiming_normal",
    ],
)
def test_deprecated_init_aliases_warn_like_torch(name):
    args = (0.5,) if name == "constant" else ()
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        w = getattr(tinyattn.nn.init, name)(tinyattn.empty(4, 3), *args)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        getattr(torch.nn.init, name)(torch.empty(4, 3), *args)
    assert [x.category for x in ours] == [x.category for x in theirs] == [FutureWarning]
    assert str(ours[0].message) == str(theirs[0].message)
    assert ours[0].filename == __file__
    assert w.shape == (4, 3)
    if name == "constant":
        assert (w.numpy() == 0.5).all()


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3,), (3, 2), (2, 3, 4), (0, 2)])
def test_meshgrid_gradcheck_and_parity(indexing, sizes):
    arrays = [rand(n, seed=n + 7 * i) for i, n in enumerate(sizes)]

    def f(lib, *ts):
        return lib.meshgrid(*ts, indexing=indexing)

    check_op(f, *arrays)


def test_meshgrid_list_form_scalar_inputs_and_default_warning():
    a, b = tinyattn.tensor(1.0), tinyattn.arange(3.0)
    with pytest.warns(UserWarning, match="indexing"):
        out = tinyattn.meshgrid([a, b])
    ref = torch.meshgrid([torch.tensor(1.0), torch.arange(3.0)], indexing="ij")
    assert [list(o.shape) for o in out] == [list(r.shape) for r in ref]


def test_meshgrid_bad_input():
    with pytest.raises(RuntimeError, match="non-empty"):
        tinyattn.meshgrid(indexing="ij")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        tinyattn.meshgrid(tinyattn.zeros(2, 2), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        tinyattn.meshgrid(tinyattn.zeros(2), tinyattn.zeros(2, dtype=tinyattn.int64), indexing="ij")
    with pytest.raises(ValueError, match="indexing"):
        tinyattn.meshgrid(tinyattn.zeros(2), indexing="ji")
    with pytest.raises((RuntimeError, ValueError)):
        torch.meshgrid(torch.zeros(2), indexing="ji")


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_family_takes_size_as_keyword(name):
    ours = getattr(tinyattn.zeros(2), name)(size=(3, 2))
    theirs = getattr(torch.zeros(2), name)(size=(3, 2))
    assert list(ours.shape) == list(theirs.shape) == [3, 2]
    with pytest.raises(TypeError, match="both positionally"):
        getattr(tinyattn.zeros(2), name)(3, size=(3,))
