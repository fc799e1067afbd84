"""batch_norm and BatchNorm1d / BatchNorm2d / LazyBatchNorm1d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_gradcheck_and_parity(shape, affine):
    c = shape[1]
    arrays = [rand(*shape, seed=1)]
    if affine:
        arrays += [rand(c, seed=2, low=0.5, high=1.5), rand(c, seed=3)]

    def f(lib, x, w=None, b=None):
        return lib.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-3)

    check_op(f, *arrays)


def test_batch_norm_eval_gradcheck_and_parity():
    c = 3
    mean, var = rand(c, seed=4), rand(c, seed=5, low=0.5, high=2.0)
    arrays = [rand(2, c, 4, seed=6), rand(c, seed=7), rand(c, seed=8), mean, var]

    def f(lib, x, w, b, m, v):
        return lib.nn.functional.batch_norm(x, m, v, w, b, training=False)

    check_op(f, *arrays, grad=[True, True, True, False, False])


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (4, 3, 6)),
                                       ("BatchNorm2d", (2, 3, 4, 3))])  # fmt: skip
def test_batchnorm_running_stats_follow_torch_step_by_step(cls, shape, momentum):
    t = getattr(torch.nn, cls)(3, momentum=momentum).double()
    o = getattr(tinyattn.nn, cls)(3, momentum=momentum).double()
    for step in range(4):
        x = rand(*shape, seed=10 + step) * (step + 1) + step
        module_parity(t, o, x, dtype=np.float64, train=True)
        # module_parity loads torch's state each time: compare after one more forward
        o(tinyattn.tensor(x))
        t(torch.tensor(x))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            np.testing.assert_allclose(
                getattr(o, name).numpy(), getattr(t, name).numpy(), rtol=1e-12, err_msg=name
            )
    module_parity(t, o, rand(*shape, seed=99), dtype=np.float64, train=False)
    module_parity(t, o, rand(*shape, seed=98), dtype=np.float32, train=False)


def test_batchnorm_without_running_stats_or_affine():
    t = torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False).double()
    o = tinyattn.nn.BatchNorm1d(3, affine=False, track_running_stats=False).double()
    assert o.running_mean is None and list(o.state_dict()) == list(t.state_dict()) == []
    module_parity(t, o, rand(4, 3, seed=1), train=False)  # batch stats in eval too
    assert repr(o) == repr(t)


def test_batchnorm_state_dict_keys_and_repr_match_torch():
    t, o = torch.nn.BatchNorm2d(4), tinyattn.nn.BatchNorm2d(4)
    assert list(o.state_dict()) == list(t.state_dict())
    assert repr(o) == repr(t)
    assert o.num_batches_tracked.dtype == tinyattn.int64
    t, o = torch.nn.BatchNorm1d(3, bias=False), tinyattn.nn.BatchNorm1d(3, bias=False)
    assert list(o.state_dict()) == list(t.state_dict()) and repr(o) == repr(t)
    module_parity(t, o, rand(4, 3, seed=2))


def test_lazy_batchnorm_infers_num_features():
    lazy = tinyattn.nn.LazyBatchNorm1d().to(tinyattn.float64)
    assert lazy.has_uninitialized_params()
    x = rand(6, 4, seed=3)
    y = lazy(tinyattn.tensor(x))
    assert type(lazy).__name__ == "BatchNorm1d" and lazy.num_features == 4
    assert not isinstance(lazy.running_mean, tinyattn.nn.Parameter)
    assert list(dict(lazy.named_parameters())) == ["weight", "bias"]
    ref = torch.nn.BatchNorm1d(4).double()
    np.testing.assert_allclose(y.detach().numpy(), ref(torch.tensor(x)).detach().numpy())
    np.testing.assert_allclose(lazy.running_var.numpy(), ref.running_var.numpy())
    assert lazy.running_mean.dtype == tinyattn.float64


def test_batchnorm_bad_input():
    with pytest.raises(ValueError, match="2D or 3D"):
        tinyattn.nn.BatchNorm1d(3)(tinyattn.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError):
        torch.nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tinyattn.nn.BatchNorm1d(3)(tinyattn.zeros(1, 3))
    with pytest.raises(ValueError, match="more than 1 value"):
        torch.nn.BatchNorm1d(3)(torch.zeros(1, 3))
    with pytest.raises(RuntimeError, match="running_mean"):
        tinyattn.nn.functional.batch_norm(
            tinyattn.zeros(2, 3), tinyattn.zeros(4), tinyattn.ones(3), training=False
        )
    with pytest.raises(RuntimeError, match="must be given"):
        tinyattn.nn.functional.batch_norm(tinyattn.zeros(2, 3), None, None, training=False)


@pytest.mark.parametrize(
    "make,src",
    [
        (lambda nn: nn.LazyLinear(2), lambda nn: nn.Linear(3, 2)),
        (lambda nn: nn.LazyConv2d(2, 3), lambda nn: nn.Conv2d(3, 2, 3)),
        (lambda nn: nn.LazyBatchNorm1d(), lambda nn: nn.BatchNorm1d(3)),
    ],
)
def test_lazy_module_to_double_then_load_state_dict_gives_float64(make, src):
    """torch materialises a lazy placeholder in the dtype ``.to()`` gave it, not the file's."""
    ours, theirs = make(tinyattn.nn).double(), make(torch.nn).double()
    ours.load_state_dict(src(tinyattn.nn).state_dict())
    theirs.load_state_dict(src(torch.nn).state_dict())
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], name
