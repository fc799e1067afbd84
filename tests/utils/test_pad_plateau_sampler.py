"""pad_sequence, ReduceLROnPlateau and DistributedSampler against torch."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tinyattn.nn.utils.rnn import pad_sequence
from tinyattn.optim.lr_scheduler import ReduceLROnPlateau
from tinyattn.utils.data.distributed import DistributedSampler

torch = pytest.importorskip("torch")


# -- pad_sequence ---------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (2,)])
def test_pad_sequence_gradcheck_and_parity(batch_first, side, trailing):
    arrays = [rand(n, *trailing, seed=n) for n in (3, 1, 4)]

    def f(lib, *seqs):
        ps = lib.nn.utils.rnn.pad_sequence
        return ps(list(seqs), batch_first=batch_first, padding_value=-2.5, padding_side=side)

    check_op(f, *arrays)


def test_pad_sequence_tensor_input_and_bad_input():
    x = np.arange(24.0).reshape(2, 3, 4)
    a = pad_sequence(tinyattn.tensor(x))
    assert list(a.shape) == list(torch.nn.utils.rnn.pad_sequence(torch.tensor(x)).shape)
    with pytest.raises(RuntimeError, match="empty"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="padding_side"):
        pad_sequence([tinyattn.zeros(2)], padding_side="up")
    with pytest.raises(RuntimeError, match="trailing dims"):
        pad_sequence([tinyattn.zeros(2, 3), tinyattn.zeros(2, 4)])
    with pytest.raises(RuntimeError):
        torch.nn.utils.rnn.pad_sequence([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(TypeError, match="sequences"):
        pad_sequence([tinyattn.zeros(2), [1.0]])


# -- ReduceLROnPlateau ------------------------------------------------------------------------
CONFIGS = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2},
    {"patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
    {"patience": 0, "factor": 0.5, "min_lr": [0.2, 0.01]},
    {"patience": 0, "factor": 0.5, "min_lr": 0.3, "eps": 0.01},
    {"mode": "max", "threshold_mode": "abs", "threshold": 0.0, "patience": 1, "cooldown": 1},
]


def _two_group_optimizers():
    a = [tinyattn.zeros(2, requires_grad=True), tinyattn.zeros(1, requires_grad=True)]
    b = [torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)]
    groups = lambda ps: [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5}]  # noqa: E731
    return tinyattn.optim.SGD(groups(a), lr=1.0), torch.optim.SGD(groups(b), lr=1.0)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_reduce_lr_on_plateau_step_by_step(cfg):
    ours_opt, theirs_opt = _two_group_optimizers()
    ours = ReduceLROnPlateau(ours_opt, **cfg)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **cfg)
    rng = random.Random(0)
    metric = 10.0
    for i in range(40):
        metric += rng.choice([-1.0, 0.0, 0.5, -0.05, 0.01])
        if i % 3 == 0:  # a 0-d tensor metric, as `scheduler.step(val_loss)` passes
            ours.step(tinyattn.tensor(metric))
            theirs.step(torch.tensor(metric))
        else:
            ours.step(metric)
            theirs.step(metric)
        assert ours.get_last_lr() == theirs.get_last_lr(), i
        assert [g["lr"] for g in ours_opt.param_groups] == [
            g["lr"] for g in theirs_opt.param_groups
        ]
        for k in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
            assert getattr(ours, k) == getattr(theirs, k), (i, k)


def test_reduce_lr_on_plateau_state_dict_round_trip():
    opt, theirs_opt = _two_group_optimizers()
    s = ReduceLROnPlateau(opt, patience=1, mode="max")
    t = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, patience=1, mode="max")
    for v in (1.0, 0.5, 0.5):
        s.step(v)
        t.step(v)
    sd = s.state_dict()
    assert "optimizer" not in sd
    assert set(sd) == set(t.state_dict())
    for k, v in t.state_dict().items():
        assert sd[k] == v, k
    fresh = ReduceLROnPlateau(_two_group_optimizers()[0])
    fresh.load_state_dict(sd)
    assert (fresh.mode, fresh.mode_worse, fresh.best, fresh.num_bad_epochs) == (
        "max",
        -math.inf,
        1.0,
        sd["num_bad_epochs"],
    )
    assert isinstance(s, tinyattn.optim.lr_scheduler.LRScheduler)


def test_reduce_lr_on_plateau_param_group_added_later():
    def run(lib, min_lr):
        p = [lib.zeros(1, requires_grad=True) for _ in range(3)]
        opt = lib.optim.SGD([p[0]], lr=1.0)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
        opt.add_param_group({"params": [p[1]], "lr": 0.5})
        for metric in (3.0, 3.0, 3.0):
            sched.step(metric)
        return [g["lr"] for g in opt.param_groups], sched.min_lrs

    assert run(tinyattn, 0.02) == run(torch, 0.02)  # the scalar min_lr covers the new group
    with pytest.raises(RuntimeError, match="param groups"):
        run(tinyattn, [0.02])
    with pytest.raises(RuntimeError):
        run(torch, [0.02])


def test_reduce_lr_on_plateau_load_state_dict_recomputes_mode_worse():
    opt = _two_group_optimizers()[0]
    sd = ReduceLROnPlateau(opt, mode="max").state_dict()
    del sd["mode_worse"]
    fresh = ReduceLROnPlateau(_two_group_optimizers()[0])
    fresh.load_state_dict(sd)
    assert fresh.mode == "max" and fresh.mode_worse == -math.inf
    sd["threshold_mode"] = "pct"
    with pytest.raises(ValueError, match="threshold mode"):
        fresh.load_state_dict(sd)


def test_reduce_lr_on_plateau_bad_input():
    opt = _two_group_optimizers()[0]
    with pytest.raises(ValueError, match="factor"):
        ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode"):
        ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="threshold mode"):
        ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="min_lr"):
        ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(TypeError, match="optimizer"):
        ReduceLROnPlateau([1])
    with pytest.raises(TypeError, match="metrics"):
        ReduceLROnPlateau(opt).step("loss")
    with pytest.warns(UserWarning, match="epoch"):
        ReduceLROnPlateau(opt).step(1.0, epoch=3)


# -- DistributedSampler ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch_unshuffled(n, replicas, drop_last):
    if n == 0 and not drop_last:
        pytest.skip("torch divides by zero padding an empty dataset")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.distributed.DistributedSampler(
            range(n), replicas, rank, shuffle=False, drop_last=drop_last
        )
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


def test_distributed_sampler_shuffle_is_deterministic_and_partitions():
    n, replicas = 11, 3
    shards = [list(DistributedSampler(range(n), replicas, r, seed=5)) for r in range(replicas)]
    again = [list(DistributedSampler(range(n), replicas, r, seed=5)) for r in range(replicas)]
    assert shards == again
    flat = [i for s in shards for i in s]
    assert set(flat) == set(range(n)) and len(flat) == 12  # padded by one repeated index
    s = DistributedSampler(range(n), replicas, 0, seed=5)
    s.set_epoch(1)
    assert (
        list(s) != shards[0] or list(DistributedSampler(range(n), replicas, 1, seed=5)) != shards[1]
    )
    assert list(DistributedSampler(range(n), replicas, 0, seed=6)) != shards[0]
    loader = tinyattn.utils.data.DataLoader(
        tinyattn.utils.data.TensorDataset(tinyattn.arange(11.0)),
        batch_size=2,
        sampler=DistributedSampler(range(n), replicas, 2, shuffle=False),
    )
    assert [b[0].tolist() for b in loader] == [[2.0, 5.0], [8.0, 0.0]]


def test_distributed_sampler_bad_input():
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError):
        torch.utils.data.distributed.DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(range(4), 2, -1)
    with pytest.raises(ValueError, match="not been initialized|initialized"):
        DistributedSampler(range(4))
    with pytest.raises(TypeError, match="num_replicas"):
        DistributedSampler(range(4), 2.0, 0)
