"""Activation checkpointing: same gradients as the plain function, no stored activations."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity

import tinyattn
from tinyattn.utils.checkpoint import Checkpoint, checkpoint

try:
    import torch
    import torch.utils.checkpoint
except ImportError:
    torch = None


def _ckpt(lib):
    return checkpoint if lib is tinyattn else torch.utils.checkpoint.checkpoint


def test_checkpoint_gradcheck_and_torch_parity():
    """Checkpoint node: float64 finite differences over every element + torch parity."""

    def f(lib, x, w, b):
        def block(h, weight, bias):
            return ((h @ weight + bias).tanh() * h.sum(-1, keepdim=True)).exp()

        return _ckpt(lib)(block, x, w, b, use_reentrant=False)

    arrays = rand(3, 4, seed=1), rand(4, 4, seed=2) * 0.5, rand(4, seed=3)
    run_gradcheck(f, *arrays)
    run_parity(f, *arrays)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_second_order(use_reentrant):
    """create_graph through a checkpoint: gradgradcheck + second derivatives vs torch's
    non-reentrant checkpoint (torch's reentrant mode has no double backward)."""

    def f(lib, x, w, b):
        def block(h, weight, bias):
            return ((h * weight + bias).tanh() * h.sum(-1, keepdim=True)).exp()

        reentrant = use_reentrant and lib is tinyattn
        return _ckpt(lib)(block, x, w, b, use_reentrant=reentrant)

    check_op(f, rand(3, 4, seed=1), rand(4, seed=2) * 0.5, rand(4, seed=3))


def test_checkpoint_second_order_closure_params_and_a_graph_before_it():
    """backward(create_graph=True) through x = a * 2 -> checkpoint(block with closure w):
    a.grad and w.grad carry graphs whose gradients match torch (non-reentrant)."""
    results = []
    for lib in (tinyattn, torch) if torch is not None else (tinyattn,):
        a = lib.tensor(rand(2, 3, seed=6), requires_grad=True)
        w = lib.tensor(rand(3, seed=7), requires_grad=True)
        y = _ckpt(lib)(lambda h, w=w: (h * w).sin() * h, a * 2, use_reentrant=False)
        y.sum().backward(create_graph=True)
        penalty = (a.grad * a.grad).sum() + (w.grad * w.grad).sum()
        results.append([g.detach().numpy() for g in lib.autograd.grad(penalty, (a, w))])
    for ours, theirs in zip(*results) if len(results) == 2 else ():
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_checkpoint_multiple_outputs_second_order_matches_plain():
    x = tinyattn.tensor(rand(2, 3, seed=4), requires_grad=True)
    grads = []
    for use_checkpoint in (True, False):

        def block(a):
            return a.sin(), (a * a).tanh()

        s, t = checkpoint(block, x, use_reentrant=False) if use_checkpoint else block(x)
        (g,) = tinyattn.autograd.grad((s * t).sum() + s.sum(), x, create_graph=True)
        grads.append(tinyattn.autograd.grad((g * g).sum(), x)[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-12)


def test_checkpoint_multiple_outputs_parity():
    def f(lib, x, y):
        def block(a, b):
            s = a * b
            return s.sin(), (s + a).tanh()

        return _ckpt(lib)(block, x, y, use_reentrant=False)

    check_op(f, rand(2, 3, seed=4), rand(2, 3, seed=5))


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    return [
        tinyattn.tensor(rng.standard_normal(s), requires_grad=True) for s in ((5, 6), (6,), (6, 5))
    ]


def _block(params):
    w1, b1, w2 = params

    def block(h):
        return ((h @ w1 + b1).tanh() @ w2).sigmoid()

    return block


@pytest.mark.parametrize("use_reentrant", [None, True, False])
def test_gradients_identical_to_plain_function_including_closure_params(use_reentrant):
    x_data = np.random.default_rng(1).standard_normal((3, 5))
    grads = []
    for use_ckpt in (False, True):
        params = _mlp()
        x = tinyattn.tensor(x_data, requires_grad=True)
        block = _block(params)
        h = x
        for _ in range(3):  # a stack of blocks sharing weights
            h = checkpoint(block, h, use_reentrant=use_reentrant) if use_ckpt else block(h)
        (h * h).sum().backward()
        grads.append([x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in params])
    for plain, ckpt in zip(*grads):
        np.testing.assert_array_equal(plain, ckpt)  # float64, same ops: bit-identical


def test_forward_stores_only_the_inputs():
    params = _mlp()
    x = tinyattn.tensor(np.ones((3, 5)), requires_grad=True)
    y = checkpoint(_block(params), x, use_reentrant=False)
    node = y.grad_fn
    assert node.fn is Checkpoint
    # the only graph between y and x is the checkpoint node: no intermediate nodes ...
    assert node.next_nodes == (x._grad_node(),)
    # ... and what it saved is x's array itself, nothing computed inside the block
    assert len(node._saved) == 1 and node._saved[0] is x._data
    plain = _block(params)(x)
    assert plain.grad_fn.fn is not Checkpoint  # the plain version records the whole chain


def test_closure_params_get_grads_when_inputs_do_not_require_grad():
    params = _mlp()
    x = tinyattn.tensor(np.ones((2, 5)))  # a constant input (e.g. token embeddings frozen)
    y = checkpoint(_block(params), x, use_reentrant=False)
    assert y.requires_grad
    y.sum().backward()
    expected = _mlp()
    _block(expected)(x).sum().backward()
    for p, e in zip(params, expected):
        np.testing.assert_array_equal(p.grad.numpy(), e.grad.numpy())
    assert x.grad is None


def test_random_ops_are_replayed_in_recomputation():
    x = tinyattn.tensor(np.ones((4, 50)), requires_grad=True)

    def noisy(h):
        return h * tinyattn.rand(*h.shape)

    tinyattn.manual_seed(3)
    y = checkpoint(noisy, x, use_reentrant=False)
    tinyattn.rand(10)  # advance the global stream between forward and backward
    y.sum().backward()
    # d(sum(x * r))/dx = r: the mask drawn in forward, not a fresh one
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_non_tensor_args_kwargs_and_non_float_outputs():
    x = tinyattn.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)

    def block(h, scale, *, shift):
        return h * scale + shift, h.argmax(-1), "tag"

    y, idx, tag = checkpoint(block, x, 2.0, shift=1.0, use_reentrant=False)
    assert tag == "tag" and idx.tolist() == [2, 2] and not idx.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_under_no_grad_runs_plainly():
    x = tinyattn.ones(2, requires_grad=True)
    with tinyattn.no_grad():
        y = checkpoint(lambda h: h * 2, x, use_reentrant=False)
    assert y.grad_fn is None and y.tolist() == [2.0, 2.0]


def test_inplace_change_of_input_before_backward_is_detected():
    x = tinyattn.ones(3, requires_grad=True)
    h = x * 1.0
    y = checkpoint(lambda t: t.exp(), h, use_reentrant=False)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_argument_errors():
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3, tinyattn.ones(1), use_reentrant=False)
    with pytest.raises(ValueError, match="use_reentrant"):
        checkpoint(lambda t: t, tinyattn.ones(1), use_reentrant="yes")


# torch.utils.checkpoint names tinyattn does not have, and why.
CHECKPOINT_NOT_HERE = {
    # selective activation checkpointing chooses which dispatched ops to save; tinyattn
    # has no op dispatch to intercept
    "CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
    "SAC_IGNORED_OPS", "GraphExecGroup",
    # the reentrant autograd.Function of torch's implementation; tinyattn's node is Checkpoint
    "CheckpointFunction",
}  # fmt: skip


def test_checkpoint_module_has_torchs_public_names():
    torch = pytest.importorskip("torch", reason="reads torch.utils.checkpoint.__all__")
    import tinyattn.utils.checkpoint as mine

    theirs = set(torch.utils.checkpoint.__all__)
    assert not CHECKPOINT_NOT_HERE - theirs, "an exclusion torch no longer has"
    assert sorted(n for n in theirs - CHECKPOINT_NOT_HERE if not hasattr(mine, n)) == []


def test_checkpoint_sequential_equals_the_plain_run():
    from tinyattn.utils.checkpoint import checkpoint_sequential

    tinyattn.manual_seed(0)
    net = tinyattn.nn.Sequential(*[tinyattn.nn.Linear(4, 4) for _ in range(5)])
    x = tinyattn.tensor(rand(3, 4), dtype=tinyattn.float32, requires_grad=True)
    plain = net(x)
    plain.sum().backward()
    want = [p.grad.clone() for p in net.parameters()] + [x.grad.clone()]
    net.zero_grad()
    x.grad = None
    out = checkpoint_sequential(net, 2, x, use_reentrant=False)
    out.sum().backward()
    got = [p.grad for p in net.parameters()] + [x.grad]
    assert np.allclose(out.detach().numpy(), plain.detach().numpy())
    assert all(np.allclose(a.numpy(), b.numpy()) for a, b in zip(got, want))
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(net, 0, x)


def test_device_state_helpers_on_a_cpu():
    from tinyattn.utils import checkpoint as ck

    x = tinyattn.ones(2, requires_grad=True)
    assert ck.get_device_states(x, 3) == ([], [])
    ck.set_device_states([], [])
    with pytest.raises(RuntimeError, match="devices must be empty"):
        ck.set_device_states([0], [object()])
    a, b = ck.detach_variable((x, 5))
    assert a.requires_grad and a.grad_fn is None and b == 5
    with pytest.raises(RuntimeError, match="Only tuple"):
        ck.detach_variable([x])
    with pytest.warns(UserWarning, match="requires_grad"):
        ck.check_backward_validity((tinyattn.ones(2),))
    with ck.set_checkpoint_early_stop(False), ck.set_checkpoint_debug_enabled(True):
        assert ck.noop_context_fn()[0] is not None
    assert ck.DefaultDeviceType.get_device_type() == "cuda"
