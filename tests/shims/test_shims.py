"""CPU shims for GPU-era scripts: each does what its docstring says, and as torch where torch
(CPU-only) does something observable."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tinyattn


def _torch():
    return pytest.importorskip("torch")


# -- backends ---------------------------------------------------------------------------------
def test_backend_flags_are_settable_with_torch_defaults():
    b = tinyattn.backends
    assert b.cuda.matmul.allow_tf32 is False and b.cudnn.allow_tf32 is True
    assert b.cudnn.benchmark is False and b.cudnn.deterministic is False
    assert b.mps.is_available() is False and b.cudnn.is_available() is False
    saved = (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark, b.cudnn.deterministic)
    try:
        b.cuda.matmul.allow_tf32 = True
        b.cudnn.allow_tf32 = False
        b.cudnn.benchmark = True
        b.cudnn.deterministic = True
        assert b.cuda.matmul.allow_tf32 is True and b.cudnn.benchmark is True
    finally:
        (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, b.cudnn.benchmark) = saved[:3]
        b.cudnn.deterministic = saved[3]
    with pytest.raises(AttributeError, match="Unknown attribute bogus"):
        b.cuda.matmul.bogus = 1


def test_backend_flags_change_no_numbers():
    a, w = tinyattn.randn(8, 16), tinyattn.randn(16, 4)
    before = (a @ w).numpy().copy()
    tinyattn.backends.cuda.matmul.allow_tf32 = True
    tinyattn.set_float32_matmul_precision("medium")
    try:
        assert np.array_equal((a @ w).numpy(), before)
        assert tinyattn.get_float32_matmul_precision() == "medium"
    finally:
        tinyattn.backends.cuda.matmul.allow_tf32 = False
        tinyattn.set_float32_matmul_precision("highest")


def test_set_float32_matmul_precision_rejects_unknown_values_as_torch():
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        tinyattn.set_float32_matmul_precision("bogus")
    assert tinyattn.get_float32_matmul_precision() == "highest"


def test_backend_defaults_match_torch():
    torch = _torch()
    assert tinyattn.backends.cudnn.benchmark == torch.backends.cudnn.benchmark
    assert tinyattn.backends.cudnn.deterministic == torch.backends.cudnn.deterministic
    assert tinyattn.backends.cudnn.allow_tf32 == torch.backends.cudnn.allow_tf32
    assert tinyattn.backends.mps.is_available() == torch.backends.mps.is_available()
    assert tinyattn.cuda.is_available() == torch.cuda.is_available()


# -- bfloat16 ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: tinyattn.zeros(2, dtype=tinyattn.bfloat16),
        lambda: tinyattn.ones(2).to(tinyattn.bfloat16),
        lambda: tinyattn.ones(2).to(dtype=tinyattn.bfloat16),
        lambda: tinyattn.tensor([1.0], dtype=tinyattn.bfloat16),
        lambda: tinyattn.randn(2, dtype=tinyattn.bfloat16),
        lambda: tinyattn.nn.Linear(2, 2).to(tinyattn.bfloat16),
        lambda: tinyattn.nn.Linear(2, 2, dtype=tinyattn.bfloat16),
        lambda: tinyattn.set_default_dtype(tinyattn.bfloat16),
    ],
)
def test_bfloat16_tensors_raise_a_clear_type_error(make):
    with pytest.raises(TypeError, match="NumPy has no bfloat16"):
        make()
    assert tinyattn.get_default_dtype() == tinyattn.float32


def test_bfloat16_is_a_dtype_object():
    import copy
    import pickle

    bf16 = tinyattn.bfloat16
    assert isinstance(bf16, tinyattn.dtype) and repr(bf16) == "tinyattn.bfloat16"
    assert bf16.is_floating_point and bf16.itemsize == 2
    assert tinyattn.ones(1).dtype != bf16
    assert pickle.loads(pickle.dumps(bf16)) is bf16 and copy.deepcopy(bf16) is bf16


# -- autocast ---------------------------------------------------------------------------------
def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize(
    "kwargs, expect",
    [
        (dict(device_type="cpu"), "full precision"),
        (dict(device_type="cpu", dtype=tinyattn.bfloat16), "full precision"),
        (dict(device_type="cpu", dtype=tinyattn.float16), "full precision"),
        (dict(device_type="cpu", dtype=tinyattn.float32), "target dtype is not supported"),
        (dict(device_type="cuda"), "CUDA is not available"),
    ],
)
def test_autocast_warns_and_runs_in_full_precision(kwargs, expect):
    a = tinyattn.randn(3, 4, requires_grad=True)
    w = tinyattn.randn(4, 2)
    reference = a @ w
    with pytest.warns(UserWarning, match=expect):
        ctx = tinyattn.autocast(**kwargs)
    with ctx:
        out = a @ w
        assert not tinyattn.is_autocast_enabled()
    assert out.dtype == tinyattn.float32
    assert np.array_equal(out.detach().numpy(), reference.detach().numpy())
    out.sum().backward()
    assert a.grad is not None and a.grad.dtype == tinyattn.float32


def test_autocast_disabled_is_silent_and_works_as_decorator():
    assert _warnings_of(lambda: tinyattn.amp.autocast("cpu", enabled=False)) == []

    @tinyattn.autocast("cpu", enabled=False)
    def f(x):
        return x * 2

    assert f(tinyattn.ones(2)).tolist() == [2.0, 2.0]


def test_autocast_argument_errors_match_torch():
    torch = _torch()
    for bad, exc in ((3, ValueError), ("tpu", RuntimeError)):
        with pytest.raises(exc) as theirs:
            torch.autocast(device_type=bad)
        with pytest.raises(exc) as ours:
            tinyattn.autocast(device_type=bad)
        assert str(ours.value) == str(theirs.value)
    assert str(tinyattn.get_autocast_dtype("cpu")) == "tinyattn.bfloat16"
    assert str(torch.get_autocast_dtype("cpu")) == "torch.bfloat16"


def test_autocast_warning_categories_match_torch():
    torch = _torch()

    def kinds(make):
        return [c for c, _ in _warnings_of(make)]

    assert kinds(lambda: tinyattn.autocast("cuda")) == kinds(lambda: torch.autocast("cuda"))
    assert kinds(lambda: tinyattn.cuda.amp.autocast()) == kinds(lambda: torch.cuda.amp.autocast())
    assert kinds(lambda: tinyattn.autocast("cpu", dtype=tinyattn.float64)) == kinds(
        lambda: torch.autocast("cpu", dtype=torch.float64)
    )


# -- GradScaler -------------------------------------------------------------------------------
def test_cuda_grad_scaler_disables_itself_as_torch():
    torch = _torch()
    for ours, theirs in (
        (lambda: tinyattn.amp.GradScaler(), lambda: torch.amp.GradScaler()),
        (lambda: tinyattn.cuda.amp.GradScaler(), lambda: torch.cuda.amp.GradScaler()),
    ):
        w_o, w_t = _warnings_of(ours), _warnings_of(theirs)
        assert [c for c, _ in w_o] == [c for c, _ in w_t]
        assert any("CUDA is not available" in m and "Disabling" in m for _, m in w_o)
    with pytest.warns(UserWarning):
        scaler = tinyattn.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    w = tinyattn.ones(2, requires_grad=True)
    opt = tinyattn.optim.SGD([w], lr=0.1)
    loss = (w * 2).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    assert scaler.step(opt) is None
    scaler.update()
    assert np.allclose(w.detach().numpy(), [0.8, 0.8])  # opt.step() ran on unscaled grads
    assert _warnings_of(lambda: tinyattn.amp.GradScaler(enabled=False)) == []


def _scaler_run(lib, steps=6):
    """A tiny float32 training loop with a CPU GradScaler; step 2 has an inf gradient."""
    lib.manual_seed(0)
    w = lib.tensor(np.array([0.5, -1.0, 2.0], np.float32), requires_grad=True)
    x = lib.tensor(np.array([[1.0, 2.0, 3.0], [0.5, -0.5, 1.0]], np.float32))
    opt = lib.optim.SGD([w], lr=0.01, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    scales, returns = [], []
    for step in range(steps):
        opt.zero_grad()
        loss = ((x @ w) ** 2).mean()
        if step == 2:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        returns.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
    return w.detach().numpy(), scales, scaler.state_dict()


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_cpu_grad_scaler_matches_torch():
    torch = _torch()
    w_o, scales_o, state_o = _scaler_run(tinyattn)
    w_t, scales_t, state_t = _scaler_run(torch)
    assert scales_o == scales_t == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0]
    np.testing.assert_allclose(w_o, w_t, rtol=1e-6)
    assert state_o == state_t


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_cpu_grad_scaler_without_torch():
    w, scales, state = _scaler_run(tinyattn)
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0]
    assert state == {
        "scale": 2048.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 2,
        "_growth_tracker": 1,
    }
    assert np.all(np.isfinite(w))


@pytest.mark.parametrize(
    "misuse",
    ["step_twice", "unscale_after_step", "unscale_twice", "closure", "empty_state", "bad_outputs"],
)
def test_cpu_grad_scaler_misuse_errors_match_torch(misuse):
    torch = _torch()

    def run(lib):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s = lib.amp.GradScaler("cpu")
        if misuse == "empty_state":
            return s.load_state_dict({})
        if misuse == "bad_outputs":
            return s.scale(3.0)
        s.scale((w * 2).sum()).backward()
        if misuse == "step_twice":
            s.step(opt)
            s.step(opt)
        elif misuse == "unscale_after_step":
            s.step(opt)
            s.unscale_(opt)
        elif misuse == "unscale_twice":
            s.unscale_(opt)
            s.unscale_(opt)
        elif misuse == "closure":
            s.step(opt, closure=lambda: 0)

    with pytest.raises(Exception) as theirs:
        run(torch)
    with pytest.raises(type(theirs.value)) as ours:
        run(tinyattn)
    assert str(ours.value) == str(theirs.value)


def test_grad_scaler_state_dict_round_trip():
    a = tinyattn.amp.GradScaler("cpu", init_scale=4.0, growth_interval=7)
    b = tinyattn.amp.GradScaler("cpu")
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict() and b.get_scale() == 4.0


# -- compile ----------------------------------------------------------------------------------
def test_compile_returns_the_model_itself():
    model = tinyattn.nn.Linear(2, 3)
    assert tinyattn.compile(model) is model
    assert tinyattn.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model
    assert tinyattn.compile(model, backend="inductor", options={"x": 1}) is model

    @tinyattn.compile
    def f(x):
        return x + 1

    @tinyattn.compile(mode="reduce-overhead")
    def g(x):
        return x * 3

    assert f(tinyattn.ones(1)).tolist() == [2.0] and g(tinyattn.ones(1)).tolist() == [3.0]


def test_compile_argument_errors_match_torch():
    torch = _torch()
    for kw in (dict(mode="bogus"), dict(mode="default", options={})):
        with pytest.raises(RuntimeError) as theirs:
            torch.compile(torch.nn.Linear(2, 2), **kw)
        with pytest.raises(RuntimeError) as ours:
            tinyattn.compile(tinyattn.nn.Linear(2, 2), **kw)
        assert str(ours.value) == str(theirs.value)


# -- distributed ------------------------------------------------------------------------------
def test_distributed_is_unavailable_and_says_where_to_go():
    import tinyattn.distributed as dist

    assert dist.is_available() is False and dist.is_initialized() is False
    assert dist.is_torchelastic_launched() is False
    assert dist.ReduceOp.SUM is not dist.ReduceOp.AVG
    with pytest.raises(RuntimeError, match="move to torch"):
        dist.init_process_group(backend="gloo")
    for name in ("get_rank", "get_world_size", "barrier", "destroy_process_group"):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            getattr(dist, name)()
    with pytest.raises(ValueError, match="state_dicts"):
        dist.all_reduce(tinyattn.ones(1), op=dist.ReduceOp.SUM)


def test_distributed_errors_have_torch_types_without_a_process_group():
    torch = _torch()
    import torch.distributed as tdist

    import tinyattn.distributed as dist

    for name in ("get_rank", "get_world_size", "barrier"):
        with pytest.raises(ValueError) as theirs:
            getattr(tdist, name)()
        with pytest.raises(ValueError) as ours:
            getattr(dist, name)()
        assert str(ours.value).startswith(str(theirs.value))
    assert dist.is_initialized() == tdist.is_initialized()
    assert torch is not None


def test_ddp_is_importable_and_refuses_to_build():
    from tinyattn.nn.parallel import DistributedDataParallel
    from tinyattn.nn.parallel import DistributedDataParallel as DDP

    assert DDP is DistributedDataParallel
    with pytest.raises(RuntimeError, match="move to torch.*state_dicts"):
        DDP(tinyattn.nn.Linear(2, 2), device_ids=[0])


def test_data_parallel_is_the_module_on_one_device():
    inner = tinyattn.nn.Linear(3, 2)
    model = tinyattn.nn.DataParallel(inner)
    x = tinyattn.randn(4, 3)
    assert np.array_equal(model(x).detach().numpy(), inner(x).detach().numpy())
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    assert model.module is inner and list(model.parameters()) == list(inner.parameters())


def test_data_parallel_state_dict_matches_torch():
    torch = _torch()
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    ours = tinyattn.nn.DataParallel(tinyattn.nn.Linear(3, 2))
    ours.load_state_dict({k: tinyattn.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        ours(tinyattn.tensor(x)).detach().numpy(),
        theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-6,
    )


def test_cuda_namespace():
    assert tinyattn.cuda.is_available() is False and tinyattn.cuda.is_bf16_supported() is False
    from tinyattn.cuda.amp import GradScaler, autocast  # the deprecated torch spelling imports

    assert issubclass(GradScaler, tinyattn.amp.GradScaler)
    assert issubclass(autocast, tinyattn.amp.autocast)


def test_shims_import_nothing_heavy():
    code = (
        "import sys, tinyattn; "
        "print(sorted(m for m in ('einops', 'multiprocessing', 'tinyattn.utils.data') "
        "if m in sys.modules))"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert out.stdout.strip() == "[]"


def test_cuda_device_and_memory_queries_behave_as_torch_cpu_build():
    torch = _torch()
    for name in (
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
    ):
        assert getattr(tinyattn.cuda, name)() == getattr(torch.cuda, name)() == 0
    assert tinyattn.cuda.is_initialized() is torch.cuda.is_initialized() is False
    for name in (
        "current_device",
        "get_device_name",
        "get_device_properties",
        "get_device_capability",
    ):
        args = () if name == "current_device" else (0,)
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(tinyattn.cuda, name)(*args)
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(torch.cuda, name)(*args)
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        tinyattn.cuda.reset_peak_memory_stats()
    for lib in (tinyattn, torch):
        with pytest.raises(RuntimeError, match="dummy base class Event"):
            lib.cuda.Event(enable_timing=True)


@pytest.mark.parametrize("name", ["has_mps", "has_cuda", "has_cudnn"])
def test_deprecated_build_flags_warn_and_match_torch(name):
    torch = _torch()
    with pytest.warns(UserWarning, match=f"'{name}' is deprecated") as ours:
        value = getattr(tinyattn, name)
    with pytest.warns(UserWarning, match=f"'{name}' is deprecated") as theirs:
        expected = getattr(torch, name)
    assert value is expected is False
    assert str(ours[0].message) == str(theirs[0].message)
