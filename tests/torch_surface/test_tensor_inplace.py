"""Tensor methods public programs call: aliases (divide, isclose ...),
in-place forms of composite ops (addmm_, lerp_, cumsum_ ...), fill_diagonal_, in-place
transposes, sum_to_size, legacy ``new``, resize_/set_, Python callables (apply_, map_) and
register_post_accumulate_grad_hook. Compared with torch when installed."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand, run_parity, torch

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


# -- differentiable: gradcheck + torch parity -----------------------------------------------
CASES = {
    "divide": (lambda lib, a, b: a.divide(b), (rand(3, 4, seed=1), rand(4, low=0.5, high=2.0))),
    "divide_floor": (lambda lib, a, b: a.divide(b, rounding_mode="floor") + a,
                     (rand(3, seed=1), rand(3, low=0.5, high=2.0, seed=2))),
    "multiply": (lambda lib, a, b: a.multiply(b), (rand(3, 4, seed=1), rand(3, 1, seed=2))),
    "subtract": (lambda lib, a, b: a.subtract(b, alpha=2), (rand(3, 4, seed=1), rand(4, seed=2))),
    "addmm_": (lambda lib, x, a, b: (x * 1).addmm_(a, b, beta=0.5, alpha=2),
               (rand(2, 4, seed=3), rand(2, 3, seed=4), rand(3, 4, seed=5))),
    "baddbmm_": (lambda lib, x, a, b: (x * 1).baddbmm_(a, b, alpha=-1),
                 (rand(2, 2, 4, seed=3), rand(2, 2, 3, seed=4), rand(2, 3, 4, seed=5))),
    "addbmm_": (lambda lib, x, a, b: (x * 1).addbmm_(a, b, beta=2),
                (rand(2, 4, seed=3), rand(3, 2, 3, seed=4), rand(3, 3, 4, seed=5))),
    "cumsum_": (lambda lib, x: (x * 1).cumsum_(1), (rand(3, 4, seed=6),)),
    "cumprod_": (lambda lib, x: (x * 1).cumprod_(0), (rand(3, 4, seed=6),)),
    "lerp_": (lambda lib, x, e, w: (x * 1).lerp_(e, w), (rand(3, 4, seed=7), rand(3, 4, seed=8),
                                                        rand(4, seed=9))),
    "lerp_scalar": (lambda lib, x, e: (x * 1).lerp_(e, 0.3), (rand(3, 4, seed=7),
                                                             rand(3, 4, seed=8))),
    "fill_diagonal_": (lambda lib, x: (x * 1).fill_diagonal_(0.5) * x, (rand(3, 4, seed=10),)),
    "fill_diagonal_wrap": (lambda lib, x: (x * 1).fill_diagonal_(-2.0, wrap=True) * x,
                           (rand(7, 3, seed=11),)),
    "fill_diagonal_3d": (lambda lib, x: (x * 1).fill_diagonal_(3.0), (rand(2, 2, 2, seed=12),)),
    "t_": (lambda lib, x: (x * 1).t_() * lib.arange(3.0), (rand(3, 3, seed=13),)),
    "transpose_": (lambda lib, x: (x * 1).transpose_(0, 2).exp(), (rand(2, 3, 4, seed=14),)),
    "swapaxes_": (lambda lib, x: (x * 1).swapaxes_(0, 1), (rand(2, 3, seed=15),)),
    "swapdims_": (lambda lib, x: (x * 1).swapdims_(-1, 0), (rand(2, 3, seed=15),)),
    "sum_to_size": (lambda lib, x: x.sum_to_size(3, 1), (rand(2, 3, 4, seed=16),)),
    "sum_to_size_tuple": (lambda lib, x: x.sum_to_size((1, 4)), (rand(3, 4, seed=16),)),
    "inplace_on_view": (lambda lib, x, a, b: _view_addmm(x, a, b),
                        (rand(3, 4, seed=17), rand(2, 3, seed=18), rand(3, 4, seed=19))),
}  # fmt: skip


def _view_addmm(x, a, b):
    y = x * 1
    y[1:].addmm_(a, b)
    return y


@pytest.mark.parametrize("name", sorted(CASES))
def test_method_gradcheck_and_torch_parity(name):
    f, arrays = CASES[name]
    check_op(f, *arrays)


def test_isclose_allclose_methods():
    a, b = tinyattn.tensor([1.0, 2.0, float("nan")]), tinyattn.tensor([1.0, 2.1, float("nan")])
    assert a.isclose(b).tolist() == [True, False, False]
    assert a.isclose(b, atol=0.2, equal_nan=True).tolist() == [True, True, True]
    assert a.allclose(a, equal_nan=True) is True and a.allclose(b) is False


# -- in-place forms: autograd rules ---------------------------------------------------------
def test_inplace_forms_refuse_leaves_that_require_grad():
    x = tinyattn.ones(2, 2, requires_grad=True)
    for call in (lambda: x.addmm_(x, x), lambda: x.cumsum_(0), lambda: x.lerp_(x, 0.5),
                 lambda: x.t_(), lambda: x.fill_diagonal_(0.0)):  # fmt: skip
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            call()


def test_inplace_forms_write_in_place_and_bump_version():
    x = tinyattn.tensor(rand(2, 3, seed=20))
    want = tinyattn.cumsum(x, 1).numpy().copy()
    ptr, v = x.data_ptr(), x._version_value
    assert x.cumsum_(1) is x and x.data_ptr() == ptr and x._version_value > v
    np.testing.assert_allclose(x.numpy(), want)
    m = tinyattn.zeros(2, 2)
    m.addmm_(tinyattn.eye(2), tinyattn.ones(2, 2), beta=0)
    assert m.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    ints = tinyattn.tensor([1, 2, 3])
    assert ints.cumsum_(0).tolist() == [1, 3, 6] and ints.dtype == tinyattn.int64


def test_transpose_inplace_shares_memory():
    x = tinyattn.arange(6.0).reshape(2, 3)
    ptr = x.data_ptr()
    assert x.t_() is x and tuple(x.shape) == (3, 2) and x.data_ptr() == ptr
    assert not x.is_contiguous() and x.stride() == (1, 3)
    x.transpose_(0, 1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError, match="<= 2 dimensions"):
        tinyattn.zeros(2, 2, 2).t_()


def test_fill_diagonal_shapes():
    assert tinyattn.ones(2, 4).fill_diagonal_(0).tolist() == [[0, 1, 1, 1], [1, 0, 1, 1]]
    tall = tinyattn.ones(5, 2).fill_diagonal_(0, wrap=True).numpy()
    assert tall[:, 0].tolist() == [0, 1, 1, 0, 1] and tall[:, 1].tolist() == [1, 0, 1, 1, 0]
    assert tinyattn.ones(5, 2).fill_diagonal_(0).sum().item() == 8
    with pytest.raises(RuntimeError, match="equal length"):
        tinyattn.ones(2, 3, 2).fill_diagonal_(0)
    with pytest.raises(RuntimeError, match="larger than 1"):
        tinyattn.ones(3).fill_diagonal_(0)


@needs_torch
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (7, 3), (8, 3), (3, 7), (3, 3, 3), (1, 4)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_torch(shape, wrap):
    ours = tinyattn.zeros(*shape).fill_diagonal_(1, wrap=wrap)
    assert ours.tolist() == torch.zeros(*shape).fill_diagonal_(1, wrap=wrap).tolist()


def test_sum_to_size_errors():
    with pytest.raises(
        RuntimeError, match=r"size \{\[3\]\} is not expandable to size \{\[2, 2\]\}"
    ):
        tinyattn.ones(2, 2).sum_to_size(3)
    assert tinyattn.ones(2, 2).sum_to_size(2, 2).tolist() == [[1, 1], [1, 1]]


def test_char_short():
    x = tinyattn.tensor([1.7, -2.2, 300.0])
    assert x.char().dtype == tinyattn.int8 and x.short().dtype == tinyattn.int16
    assert x.short().tolist() == [1, -2, 300]


# -- construction and memory ----------------------------------------------------------------
def test_legacy_new():
    x = tinyattn.ones(2, 3, dtype=tinyattn.int64)
    assert tuple(x.new().shape) == (0,) and x.new().dtype == tinyattn.int64
    assert tuple(x.new(2, 4).shape) == (2, 4)
    assert tuple(x.new(tinyattn.Size([2, 3])).shape) == (2, 3)
    assert tuple(x.new((2, 3)).shape) == (2,)  # a tuple is data, as in torch
    got = x.new([1.5, 2])
    assert got.tolist() == [1, 2] and got.dtype == tinyattn.int64
    src = tinyattn.tensor([5, 6])
    alias = x.new(src)
    alias[0] = 9
    assert src.tolist() == [9, 6]
    with pytest.raises(TypeError, match="dtype"):
        x.new(tinyattn.tensor([1.0]))


def test_new_empty_strided():
    x = tinyattn.ones(2)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert tuple(y.shape) == (2, 3) and y.stride() == (1, 2) and y.dtype == tinyattn.float32
    z = x.new_empty_strided([0, 2], [2, 1], dtype=tinyattn.float64, requires_grad=True)
    assert tuple(z.shape) == (0, 2) and z.dtype == tinyattn.float64 and z.requires_grad
    with pytest.raises(RuntimeError, match="mismatch in length"):
        x.new_empty_strided((2, 3), (1,))


def test_resize_and_set():
    z = tinyattn.arange(6.0)
    v = z._version_value
    z.resize_(2, 3)
    assert z.tolist() == [[0, 1, 2], [3, 4, 5]] and z._version_value == v + 1
    z.resize_(2, 2)
    assert z.tolist() == [[0, 1], [2, 3]]
    z.resize_(3, 3)
    assert z.numpy().reshape(-1)[:4].tolist() == [0, 1, 2, 3]
    z.resize_as_(tinyattn.ones(4))
    assert tuple(z.shape) == (4,)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tinyattn.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (tinyattn.ones(2, requires_grad=True) * 2).resize_as_(tinyattn.ones(3))
    a, b = tinyattn.zeros(2), tinyattn.ones(3)
    assert a.set_(b) is a and a.tolist() == [1, 1, 1]
    b[0] = 7
    assert a[0].item() == 7  # shares b's memory
    assert tuple(a.set_().shape) == (0,)
    with pytest.raises(RuntimeError, match="could not set"):
        tinyattn.zeros(2).set_(tinyattn.ones(2, dtype=tinyattn.int64))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tinyattn.zeros(2, requires_grad=True).set_(tinyattn.ones(2))
    graph = tinyattn.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        graph.set_(tinyattn.ones(2))
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        tinyattn.zeros(2).set_(tinyattn.ones(2, requires_grad=True))
    with tinyattn.no_grad():
        assert graph.set_(tinyattn.ones(3)).tolist() == [1.0, 1.0, 1.0]


@needs_torch
def test_resize_matches_torch():
    for shape in [(2, 3), (2, 2), (6,), (1, 6)]:
        ours, theirs = tinyattn.arange(6.0), torch.arange(6.0)
        assert ours.resize_(*shape).tolist() == theirs.resize_(*shape).tolist()


def test_small_queries():
    x = tinyattn.ones(2)
    assert x.get_device() == -1 and x.is_inference() is False
    assert x.is_shared() is False and x.share_memory_() is x and x.is_shared() is True


@needs_torch
def test_small_queries_match_torch():
    assert torch.ones(2).get_device() == tinyattn.ones(2).get_device()
    assert torch.ones(2).is_inference() == tinyattn.ones(2).is_inference()
    assert torch.ones(2).is_shared() == tinyattn.ones(2).is_shared()


# -- Python callables -----------------------------------------------------------------------
def _callables(lib):
    x = lib.arange(6.0).reshape(2, 3)
    x.apply_(lambda v: v * v + 1)
    y = lib.ones(2, 3)
    y.map_(lib.arange(3.0), lambda a, b: a - b)
    z = lib.zeros(2, 3)
    z.map2_(lib.arange(3.0), lib.full((2, 1), 5.0), lambda a, b, c: a + b * c)
    return x.tolist(), y.tolist(), z.tolist()


def test_apply_map_map2():
    x, y, z = _callables(tinyattn)
    assert x == [[1, 2, 5], [10, 17, 26]]
    assert y == [[1, 0, -1], [1, 0, -1]]
    assert z == [[0, 5, 10], [0, 5, 10]]
    with pytest.raises(RuntimeError, match="Can't call apply_"):
        tinyattn.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match="Can't call map_"):
        tinyattn.ones(2, requires_grad=True).map_(tinyattn.ones(2), lambda a, b: a)
    with pytest.raises(TypeError, match="dtype"):
        tinyattn.ones(2).map_(tinyattn.ones(2, dtype=tinyattn.int64), lambda a, b: a)


@needs_torch
def test_apply_map_map2_match_torch():
    assert _callables(tinyattn) == _callables(torch)


# -- post-accumulate-grad hooks -------------------------------------------------------------
def _hook_run(lib):
    x = lib.ones(3, requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2).sum().backward()
    (x * x).sum().backward()
    lib.autograd.grad((x * 3).sum(), x)  # accumulates nothing: no call
    handle.remove()
    (x * 2).sum().backward()
    return seen


def test_post_accumulate_grad_hook():
    assert _hook_run(tinyattn) == [[2, 2, 2], [4, 4, 4]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (tinyattn.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tinyattn.ones(2).register_post_accumulate_grad_hook(print)


def test_post_accumulate_grad_hook_can_step_an_optimizer():
    w = tinyattn.nn.Parameter(tinyattn.ones(2))
    opt = tinyattn.optim.SGD([w], lr=0.5)

    def step(p):
        opt.step()
        opt.zero_grad()

    w.register_post_accumulate_grad_hook(step)
    (w * tinyattn.tensor([1.0, 2.0])).sum().backward()
    assert w.tolist() == [0.5, 0.0] and w.grad is None


@needs_torch
def test_post_accumulate_grad_hook_matches_torch():
    assert _hook_run(tinyattn) == _hook_run(torch)


@needs_torch
def test_divide_rounding_matches_torch():
    run_parity(lambda lib, a, b: a.divide(b, rounding_mode="trunc"),
               rand(5, low=-3, high=3, seed=30), rand(5, low=0.5, high=2.0, seed=31),
               grad=[False, False])  # fmt: skip


# -- real-dtype answers, small aliases ------------------------------------------------------
EXTRA = {
    "H": (lambda lib, x: x.H * lib.arange(3.0), (rand(3, 3, seed=40),)),
    "mH": (lambda lib, x: x.mH.exp(), (rand(2, 3, 4, seed=41),)),
    "adjoint": (lambda lib, x: x.adjoint(), (rand(3, 2, seed=42),)),
    "conj": (lambda lib, x: x.conj().resolve_conj().resolve_neg() * 2, (rand(3, seed=43),)),
    "real": (lambda lib, x: x.real * 3, (rand(3, seed=43),)),
    "hardshrink": (lambda lib, x: x.hardshrink(0.3), (rand(3, 4, seed=44),)),
    "prelu": (lambda lib, x, w: x.prelu(w), (rand(2, 3, 4, seed=45), rand(3, seed=46))),
    "narrow_copy": (lambda lib, x: x.narrow_copy(1, 1, 2), (rand(3, 4, seed=47),)),
    "unsafe_chunk": (lambda lib, x: x.unsafe_chunk(2, 1), (rand(3, 4, seed=48),)),
    "unsafe_split": (lambda lib, x: x.unsafe_split(3, 0), (rand(4, 2, seed=49),)),
    "absolute_": (lambda lib, x: (x * 1).absolute_(), (rand(3, 4, seed=50),)),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_extra_method_gradcheck_and_torch_parity(name):
    f, arrays = EXTRA[name]
    check_op(f, *arrays)


def _queries(lib):
    x = lib.tensor([1.0, float("inf"), -float("inf"), float("nan")])
    m = lib.ones(2, 3)
    return (
        x.isposinf().tolist(), lib.isposinf(x).tolist(), x.isneginf().tolist(),
        lib.isneginf(x).tolist(), x.isreal().tolist(), lib.isreal(x).tolist(),
        x.is_cpu, x.is_conj(), x.is_neg(), m.is_set_to(m), m.is_set_to(m.view(2, 3)),
        m.is_set_to(m.clone()), m.is_set_to(m.t()), lib.get_device(m), lib.is_inference(m),
        m.argwhere().tolist(), lib.ones(2, 2).bernoulli(0.0).tolist(),
        lib.full((3,), 1.0).bernoulli().tolist(), lib.tensor([0.0, 1.0]).multinomial(1).tolist(),
    )  # fmt: skip


def test_queries():
    q = _queries(tinyattn)
    assert q[0] == q[1] == [False, True, False, False]
    assert q[2] == q[3] == [False, False, True, False]
    assert q[4] == q[5] == [True] * 4
    assert q[6:13] == (True, False, False, True, True, False, False)
    assert q[13:15] == (-1, False)
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = tinyattn.ones(2).imag
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        _ = tinyattn.ones(3).H
    with pytest.raises(RuntimeError, match="batches of matrices"):
        _ = tinyattn.ones(3).mH
    z = tinyattn.arange(4.0)
    assert tinyattn.resize_as_(z, tinyattn.ones(2, 2)) is z and tuple(z.shape) == (2, 2)


@needs_torch
def test_queries_match_torch():
    assert _queries(tinyattn) == _queries(torch)
