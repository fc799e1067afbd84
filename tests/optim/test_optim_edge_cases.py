"""Edge cases a randomized comparison with torch 2.13 found: each once differed from torch.

Every test states torch's behaviour as data and, when torch is installed, checks
that torch still behaves so (the table cannot drift from the reference).
"""

import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")

ALL_OPTIMIZERS = [
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "Rprop",
    "ASGD",
]


def _lr_two_elements(lib, name):
    p = lib.zeros(2, requires_grad=True)
    return getattr(lib.optim, name)([p], lr=lib.tensor([0.1, 0.2]))


@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_tensor_lr_with_two_elements_is_rejected_as_torch(name):
    # torch: ValueError("Tensor lr must be 1-element"), for every optimizer
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        _lr_two_elements(tinyattn, name)


@needs_torch
@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_tensor_lr_with_two_elements_torch_reference(name):
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        _lr_two_elements(torch, name)


def _sequential_with_plateau(lib):
    sched = lib.optim.lr_scheduler
    opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
    schedulers = [sched.StepLR(opt, 2), sched.ReduceLROnPlateau(opt)]
    return sched.SequentialLR(opt, schedulers, milestones=[2])


def test_sequential_lr_rejects_reduce_on_plateau_at_construction():
    # torch raises at construction; tinyattn used to accept it and fail in a later step()
    # with "ReduceLROnPlateau.step() missing 1 required positional argument"
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`.*index 1"):
        _sequential_with_plateau(tinyattn)


@needs_torch
def test_sequential_lr_rejects_reduce_on_plateau_torch_reference():
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`.*index 1"):
        _sequential_with_plateau(torch)


def _lbfgs_on_empty_parameters(lib):
    p = lib.zeros(0, requires_grad=True)
    opt = lib.optim.LBFGS([p])

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    return opt.step(closure)


def test_lbfgs_on_empty_parameters_raises_a_clear_error():
    # torch: RuntimeError from max() of an empty tensor; tinyattn raised NumPy's
    # "zero-size array to reduction operation maximum which has no identity"
    with pytest.raises(RuntimeError, match="LBFGS.step: every parameter is empty"):
        _lbfgs_on_empty_parameters(tinyattn)


@needs_torch
def test_lbfgs_on_empty_parameters_torch_reference():
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        _lbfgs_on_empty_parameters(torch)


SCHEDULERS = {
    "LambdaLR": dict(lr_lambda=lambda epoch: 0.9**epoch),
    "MultiplicativeLR": dict(lr_lambda=lambda epoch: 0.9),
    "StepLR": dict(step_size=2),
    "MultiStepLR": dict(milestones=[2, 4]),
    "ConstantLR": dict(factor=0.5, total_iters=3),
    "LinearLR": dict(start_factor=0.5, total_iters=3),
    "ExponentialLR": dict(gamma=0.9),
    "PolynomialLR": dict(total_iters=4),
    "CosineAnnealingLR": dict(T_max=4),
    "CyclicLR": dict(base_lr=0.01, max_lr=0.1, step_size_up=2),
    "CosineAnnealingWarmRestarts": dict(T_0=2),
    "OneCycleLR": dict(max_lr=0.1, total_steps=10),
}
GET_LR_HINT = "To get the last learning rate computed by the scheduler, please use `get_last_lr"


def _scheduler(lib, name):
    opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    return opt, getattr(lib.optim.lr_scheduler, name)(opt, **SCHEDULERS[name])


def _get_lr_by_hand_warns_and_steps_do_not(lib, name):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the constructor's and the steps' get_lr: silent
        opt, sched = _scheduler(lib, name)
        for _ in range(3):
            opt.step()
            sched.step()
    with pytest.warns(UserWarning, match=GET_LR_HINT):
        sched.get_lr()
    assert "_get_lr_called_within_step" in sched.state_dict()  # torch's key, False
    assert sched.state_dict()["_get_lr_called_within_step"] is False


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_get_lr_called_by_hand_warns_as_torch(name):
    # torch warns (UserWarning) when get_lr() is called outside step(); tinyattn did not
    _get_lr_by_hand_warns_and_steps_do_not(tinyattn, name)


@needs_torch
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_get_lr_called_by_hand_warns_torch_reference(name):
    _get_lr_by_hand_warns_and_steps_do_not(torch, name)


def _mix_named_and_unnamed(lib, first_named):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    opt = lib.optim.SGD([("a", a)] if first_named else [a], lr=0.1)
    opt.add_param_group({"params": [b] if first_named else [("b", b)]})


@pytest.mark.parametrize("first_named", [True, False])
def test_add_param_group_cannot_mix_named_and_unnamed_groups(first_named):
    # torch raises; tinyattn accepted the group and gave a state_dict with names on
    # some groups only
    current = "without" if first_named else "with"
    with pytest.raises(ValueError, match=f"cannot add param group {current} names"):
        _mix_named_and_unnamed(tinyattn, first_named)


@needs_torch
@pytest.mark.parametrize("first_named", [True, False])
def test_add_param_group_named_unnamed_torch_reference(first_named):
    current = "without" if first_named else "with"
    with pytest.raises(ValueError, match=f"cannot add param group {current} names"):
        _mix_named_and_unnamed(torch, first_named)


def test_named_groups_may_be_added_to_a_named_optimizer():
    a = tinyattn.ones(2, requires_grad=True)
    b = tinyattn.ones(2, requires_grad=True)
    opt = tinyattn.optim.SGD([("a", a)], lr=0.1)
    opt.add_param_group({"params": [("b", b)], "lr": 0.5})
    groups = opt.state_dict()["param_groups"]
    assert [g["param_names"] for g in groups] == [["a"], ["b"]]
    assert [g["params"] for g in groups] == [[0], [1]]


def _plateau_step_with_vector(lib):
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
    lib.optim.lr_scheduler.ReduceLROnPlateau(opt).step(lib.tensor([1.0, 2.0]))


def test_plateau_metric_with_two_elements_is_a_value_error_naming_metrics():
    # torch: ValueError (only one element tensors can be converted to Python scalars);
    # tinyattn raised a RuntimeError about "Scalar" that did not name the argument
    with pytest.raises(ValueError, match=r"'metrics'.*shape \[2\]"):
        _plateau_step_with_vector(tinyattn)


@needs_torch
def test_plateau_metric_with_two_elements_torch_reference():
    with pytest.raises(ValueError, match="only one element tensors"):
        _plateau_step_with_vector(torch)


def test_plateau_accepts_a_one_element_tensor_metric():
    opt = tinyattn.optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=0.1)
    sched = tinyattn.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(tinyattn.tensor([1.0]))
    sched.step(tinyattn.tensor(2.0))
    assert sched.best == 1.0
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)  # torch: 0.1 * 0.1 after one bad epoch


FUSED_CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.2)),
]


def _run_fused(lib, name, kwargs, dtype):
    import numpy as np

    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((4, 5)).astype(dtype), requires_grad=True)
    opt = getattr(lib.optim, name)([w], fused=True, **kwargs)
    for _ in range(10):
        w.grad = lib.tensor(rng.standard_normal((4, 5)).astype(dtype))
        opt.step()
    state = opt.state_dict()["state"].get(0, {})  # SGD without momentum keeps none
    return w.detach().numpy(), {k: v.numpy() for k, v in state.items()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", FUSED_CONFIGS)
def test_fused_sgd_and_adagrad_run_and_match_torchs_fused(name, kwargs, dtype):
    # torch runs fused=True on CPU for SGD and Adagrad; tinyattn raised NotImplementedError
    import numpy as np

    ours, our_state = _run_fused(tinyattn, name, kwargs, dtype)
    assert np.isfinite(ours).all()
    if torch is None:
        return
    theirs, their_state = _run_fused(torch, name, kwargs, dtype)
    tol = (
        1e-6 if dtype == "float32" else 1e-14
    )  # torch's fused and single-tensor paths differ by rounding
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)
    assert sorted(our_state) == sorted(their_state)
    for key in their_state:
        assert our_state[key].dtype == their_state[key].dtype, key
        np.testing.assert_allclose(our_state[key], their_state[key], rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["SGD", "Adagrad"])
def test_fused_and_foreach_together_is_an_error_as_torch(name):
    w = tinyattn.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        getattr(tinyattn.optim, name)([w], fused=True, foreach=True)
    if torch is not None:
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            getattr(torch.optim, name)(
                [torch.zeros(2, requires_grad=True)], fused=True, foreach=True
            )


# Schedulers whose next rate needs a base rate per group: a group added after the
# scheduler was built makes torch raise ValueError (from zip(strict=True)) at the step
# given here; tinyattn left such a group unscheduled (CosineAnnealingLR's stuck at 0).
ADDED_GROUP_FAILS_AT = {
    "CosineAnnealingLR": (dict(T_max=4), 4),
    "LambdaLR": (dict(lr_lambda=lambda epoch: 0.9**epoch), 2),
    "MultiplicativeLR": (dict(lr_lambda=lambda epoch: 0.9), 2),
    "CosineAnnealingWarmRestarts": (dict(T_0=2), 2),
    "CyclicLR": (dict(base_lr=0.01, max_lr=0.1, step_size_up=2), 2),
}


def _step_after_add_param_group(lib, name):
    """Index of the step that raises ValueError once a group was added before step 2."""
    kwargs, _ = ADDED_GROUP_FAILS_AT[name]
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    for i in range(8):
        if i == 2:
            opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.3})
        opt.step()
        try:
            sched.step()
        except ValueError:
            return i
    return None


@pytest.mark.parametrize("name", sorted(ADDED_GROUP_FAILS_AT))
def test_group_added_after_scheduler_raises_as_torch(name):
    assert _step_after_add_param_group(tinyattn, name) == ADDED_GROUP_FAILS_AT[name][1]
    if torch is not None:
        assert _step_after_add_param_group(torch, name) == ADDED_GROUP_FAILS_AT[name][1]


def test_group_added_after_scheduler_error_message():
    opt = tinyattn.optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=0.1)
    sched = tinyattn.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5)
    opt.add_param_group({"params": [tinyattn.zeros(1, requires_grad=True)]})
    opt.step()
    with pytest.raises(ValueError, match="LambdaLR: the optimizer has 2 param groups but"):
        sched.step()


def test_chainable_schedulers_keep_scheduling_an_added_group():
    # StepLR derives the next rate from each group's current one: no error, as torch
    opt = tinyattn.optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=0.1)
    sched = tinyattn.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.add_param_group({"params": [tinyattn.zeros(1, requires_grad=True)], "lr": 0.4})
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.05, 0.2]


@pytest.mark.parametrize("saved_shape", [(3,), (1,), ()])
@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_state_loaded_for_other_shapes_is_refused_at_step(name, saved_shape):
    # torch fails at the step too ("The size of tensor a (3) must match ..."); tinyattn's
    # Adam/AdamW stepped silently, its numba kernel reading and writing past the end of
    # the loaded buffers, and the others raised raw NumPy broadcasting errors
    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    a = tinyattn.ones(*saved_shape, requires_grad=True)
    opt = getattr(tinyattn.optim, name)([a], lr=0.1, **kwargs)
    a.grad = tinyattn.ones(*saved_shape)
    opt.step()
    b = tinyattn.ones(2, requires_grad=True)
    opt2 = getattr(tinyattn.optim, name)([b], lr=0.1, **kwargs)
    opt2.load_state_dict(opt.state_dict())
    b.grad = tinyattn.ones(2)
    with pytest.raises(
        RuntimeError, match=rf"{name}\.step: state '\w+' of a parameter of shape \[2\]"
    ):
        opt2.step()
    assert b.tolist() == [1.0, 1.0]  # refused before any write


@needs_torch
@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_state_loaded_for_other_shapes_torch_reference(name):
    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    a = torch.ones(3, requires_grad=True)
    opt = getattr(torch.optim, name)([a], lr=0.1, **kwargs)
    a.grad = torch.ones(3)
    opt.step()
    b = torch.ones(2, requires_grad=True)
    opt2 = getattr(torch.optim, name)([b], lr=0.1, **kwargs)
    opt2.load_state_dict(opt.state_dict())
    b.grad = torch.ones(2)
    with pytest.raises(RuntimeError, match="size of tensor"):
        opt2.step()
