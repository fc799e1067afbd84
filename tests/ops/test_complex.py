"""Complex tensors: dtypes and promotion, creation, views, arithmetic, reductions and the
gradient convention (torch's: ``z.grad = dL/da + i dL/db``), each op held to finite
differences (complex128, both parts of every element) and to torch (forward and
gradients, complex128 and complex64)."""

import warnings

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity, torch
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

DTYPES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
    "complex64", "complex128",
]  # fmt: skip


# -- dtypes and promotion ----------------------------------------------------------------------
def test_complex_dtypes_and_aliases():
    assert tinyattn.cfloat is tinyattn.complex64 and tinyattn.cdouble is tinyattn.complex128
    assert tinyattn.complex64.is_complex and not tinyattn.complex64.is_floating_point
    assert tinyattn.complex128.itemsize == 16 and tinyattn.complex64.to_real() is tinyattn.float32
    assert tinyattn.float64.to_complex() is tinyattn.complex128
    z = tinyattn.tensor([1 + 2j, 3 - 4j])
    assert z.dtype is tinyattn.complex64 and z.is_complex() and tinyattn.is_complex(z)
    assert not tinyattn.ones(2).is_complex() and z.type().endswith(".ComplexFloatTensor")
    assert z.to(tinyattn.cdouble).type().endswith(".ComplexDoubleTensor")
    tinyattn.set_default_dtype(tinyattn.float64)
    try:
        assert tinyattn.tensor([1j]).dtype is tinyattn.complex128
    finally:
        tinyattn.set_default_dtype(tinyattn.float32)


@needs_torch
@pytest.mark.parametrize("a", DTYPES)
def test_promote_types_matches_torch_for_every_pair(a):
    for b in DTYPES:
        ours = tinyattn.promote_types(getattr(tinyattn, a), getattr(tinyattn, b))
        theirs = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert ours.name == str(theirs).replace("torch.", ""), (a, b)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda T: T.ones(2) + T.tensor(1j, dtype=T.complex128),  # 0-dim complex keeps float32
        lambda T: T.ones(2, dtype=T.float64) * 1j,
        lambda T: T.ones(2, dtype=T.int64) + T.tensor(1j, dtype=T.complex128),
        lambda T: T.ones(2, dtype=T.int64) * 1j,
        lambda T: T.ones(2, dtype=T.complex64) + T.ones(2, dtype=T.float64),
        lambda T: T.ones(2, dtype=T.complex64) * T.tensor(2.0, dtype=T.float64),
        lambda T: T.arange(3) / T.tensor([1j, 2, 3]),
        lambda T: T.tensor([1j, 2]).mean(),
    ],
)
def test_result_dtypes_of_mixed_operands_match_torch(make):
    assert make(tinyattn).dtype.name == str(make(torch).dtype).replace("torch.", "")


def test_float16_with_complex_is_refused():
    with pytest.raises(TypeError, match="complex32"):
        tinyattn.ones(2, dtype=tinyattn.float16) * 1j


# -- creation and views ------------------------------------------------------------------------
def test_complex_and_polar():
    check_op(lambda T, re, im: T.complex(re, im), rand(2, 3), rand(3, seed=1))
    check_op(lambda T, r, a: T.polar(r, a), rand(4, low=0.2), rand(4, low=-3, high=3))


@pytest.mark.parametrize(
    "bad, match",
    [
        ((np.ones(2, np.int64), np.ones(2, np.int64)), "float32 or float64"),
        ((np.ones(2), np.ones(2, np.float32)), "same dtype"),
        ((np.ones(2), np.ones(3)), "broadcastable"),
        ((np.ones(2, np.float16), np.ones(2, np.float16)), "complex32"),
    ],
)
def test_complex_refuses_bad_input(bad, match):
    with pytest.raises(RuntimeError, match=match):
        tinyattn.complex(*(tinyattn.tensor(a) for a in bad))


def test_view_as_complex_and_view_as_real():
    check_op(lambda T, x: T.view_as_complex(x), rand(3, 2))
    check_op(lambda T, x: T.view_as_complex(x.reshape(2, 2, 2)) * 2, rand(8))
    check_op(lambda T, z: T.view_as_real(z), rand(2, 3, complex=True))
    check_op(lambda T, z: T.view_as_real(z.transpose(0, 1)), rand(2, 3, complex=True))


def test_view_as_complex_shares_memory_both_ways():
    x = tinyattn.zeros(3, 2)
    z = tinyattn.view_as_complex(x)
    z[1] = 1 + 2j
    assert x[1].tolist() == [1.0, 2.0]
    x[2, 1] = 5.0
    assert z[2].item() == 5j
    r = tinyattn.view_as_real(z)
    r[0, 0] = 7.0
    assert x[0, 0].item() == 7.0 and z._base is x and r._base is x


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: tinyattn.zeros(3, 3), "last dimension of size 2"),
        (lambda: tinyattn.zeros(()), "last dimension of size 2"),
        (lambda: tinyattn.zeros(2, 4)[:, ::2], "stride 1"),
        (lambda: tinyattn.zeros(2, 3).t(), "stride 1"),
        (lambda: tinyattn.zeros(3, 2).t().contiguous().t()[:, :2], "stride 1"),
        (lambda: tinyattn.zeros(3, 3)[:, 1:], "stride divisible by 2"),
        (lambda: tinyattn.zeros(5)[1:].reshape(2, 2), "storage offset"),
        (lambda: tinyattn.zeros(3, 2, dtype=tinyattn.int64), "float32 or float64"),
        (lambda: tinyattn.zeros(3, 2, dtype=tinyattn.float16), "complex32"),
    ],
)
def test_view_as_complex_refuses_layouts_torch_refuses(make, match):
    with pytest.raises(RuntimeError, match=match):
        tinyattn.view_as_complex(make())


def test_view_as_real_refuses_real_input():
    with pytest.raises(RuntimeError, match="expected a complex tensor"):
        tinyattn.view_as_real(tinyattn.ones(2))


def test_real_and_imag():
    check_op(lambda T, z: z.real * 2 + z.imag, rand(2, 3, complex=True))
    check_op(lambda T, z: T.real(z) * T.imag(z), rand(4, complex=True))
    x = tinyattn.ones(2)
    assert tinyattn.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag  # noqa: B018


def test_real_and_imag_are_writable_views():
    z = tinyattn.tensor([1 + 2j, 3 - 4j])
    z.real[0] = 10.0
    z.imag.mul_(2)
    assert z.tolist() == [10 + 4j, 3 - 8j]
    z.imag = tinyattn.tensor([0.5, 0.5])
    z.real = 0.0
    assert z.tolist() == [0.5j, 0.5j]
    assert z.real._base is z and z.real.dtype is tinyattn.float32


@needs_torch
def test_writes_through_views_match_torch():
    for T in (tinyattn, torch):
        z = T.tensor([1 + 2j, 3 - 4j])
        z.real[1] = 9.0
        z.imag += 1
        x = T.zeros(2, 2)
        T.view_as_complex(x).imag.fill_(3.0)
        if T is tinyattn:
            ours = (z.tolist(), x.tolist())
    assert ours == (z.tolist(), x.tolist())


def test_inplace_write_with_grad_through_a_dtype_changing_view_is_refused():
    z = tinyattn.tensor([1 + 2j, 3 - 4j], requires_grad=True) * 1
    with pytest.raises(NotImplementedError, match="view of another dtype"):
        z.real.mul_(2)


def test_conj_angle_abs():
    check_op(lambda T, z: T.conj(z) * z, rand(3, complex=True))
    check_op(lambda T, z: z.conj_physical(), rand(3, complex=True))
    check_op(lambda T, z: T.angle(z), rand(2, 3, complex=True))
    check_op(lambda T, z: z.abs(), rand(2, 3, complex=True))
    check_op(lambda T, z: (z.abs() ** 2).sum(), rand(4, complex=True))


def test_gradient_convention_is_torchs():
    """L = sum(|z|^2) gives z.grad = 2 z (dL/da + i dL/db), as torch reports it."""
    z = tinyattn.tensor([1 + 2j, 3 - 4j, -0.5j], dtype=tinyattn.complex128, requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy())
    w = tinyattn.tensor([1 + 2j, 0.5 - 1j], dtype=tinyattn.complex128, requires_grad=True)
    (w * w).real.sum().backward()  # Re(z^2) = a^2 - b^2: grad 2a - 2ib = 2 conj(z)
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.conj(w.detach().numpy()))


def test_abs_and_angle_at_zero_have_zero_gradient():
    z = tinyattn.zeros(2, dtype=tinyattn.complex128, requires_grad=True)
    (z.abs() + z.angle()).sum().backward()
    assert z.grad.tolist() == [0j, 0j]


# -- arithmetic, products, reductions, shapes ---------------------------------------------------
@pytest.mark.parametrize(
    "f",
    [
        lambda T, a, b: a + b,
        lambda T, a, b: a - b * 2,
        lambda T, a, b: a * b,
        lambda T, a, b: a / b,
        lambda T, a, b: (1 + 2j) * a - b / (0.5 - 1j),
        lambda T, a, b: 3 / a,
        lambda T, a, b: -a,
    ],
)
def test_arithmetic_complex_with_complex(f):
    check_op(f, rand(2, 3, complex=True), rand(3, complex=True, seed=2))


@settings(max_examples=10)
@given(
    shapes=hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3
    )
)
@pytest.mark.parametrize("real_other", [False, True])
def test_mul_and_div_broadcast_with_size_one_and_empty_dims(shapes, real_other):
    (sa, sb), _ = shapes
    other = rand(*sb, low=0.5, high=2, seed=1, complex=not real_other)
    check_op(lambda T, a, b: a * b - a / b, rand(*sa, low=0.5, high=2, complex=True), other)


@pytest.mark.parametrize(
    "f",
    [
        lambda T, z, x: z * x,
        lambda T, z, x: x / z,
        lambda T, z, x: z / x,
        lambda T, z, x: x + z,
        lambda T, z, x: x - z,
        lambda T, z, x: x * 1j,
    ],
)
def test_arithmetic_complex_with_real(f):
    """A real operand's gradient is the real part of the complex one (torch)."""
    check_op(f, rand(2, 3, complex=True), rand(3, low=0.5, high=2))


@pytest.mark.parametrize(
    "f",
    [
        lambda T, z: T.exp(z),
        lambda T, z: T.log(z),
        lambda T, z: T.sqrt(z),
        lambda T, z: T.sin(z),
        lambda T, z: T.cos(z),
        lambda T, z: T.tanh(z),
        lambda T, z: T.reciprocal(z),
        lambda T, z: T.square(z),
        lambda T, z: T.rsqrt(z),
        lambda T, z: T.expm1(z),
        lambda T, z: T.log1p(z),
    ],
)
def test_holomorphic_unary_ops(f):
    check_op(f, rand(2, 3, low=0.2, high=1, complex=True))


def test_matmul_and_einsum():
    a, b = rand(2, 3, complex=True), rand(3, 4, complex=True, seed=3)
    check_op(lambda T, a, b: a @ b, a, b)
    check_op(lambda T, a, b: T.matmul(a[0], b), a, b)
    check_op(lambda T, a, b: a[1] @ b[:, 0], a, b)
    check_op(lambda T, a, b: T.einsum("ij,jk->ik", a, b), a, b)
    check_op(lambda T, a, b: T.einsum("ij,jk,k->i", a, b, b[0]), a, b)
    check_op(lambda T, a: T.einsum("bhd,bhd->bh", a, a), rand(2, 2, 3, complex=True))


def test_matmul_refuses_mixed_real_and_complex():
    with pytest.raises(RuntimeError, match="same dtype"):
        tinyattn.ones(2, 2) @ tinyattn.ones(2, 2, dtype=tinyattn.complex64)


def test_reductions():
    z = rand(2, 3, complex=True)
    check_op(lambda T, z: z.sum(), z)
    check_op(lambda T, z: z.sum(dim=1, keepdim=True), z)
    check_op(lambda T, z: z.mean(0), z)
    check_op(lambda T, z: T.mean(z), z)


def test_indexing_cat_stack_and_shapes():
    z, w = rand(2, 3, complex=True), rand(2, 3, complex=True, seed=4)
    check_op(lambda T, z: z[1, ::2] * z[0, :2], z)
    check_op(lambda T, z: z[T.tensor([1, 0, 1])], z)
    check_op(lambda T, z, w: T.cat([z, w], dim=1), z, w)
    check_op(lambda T, z, w: T.stack([z, w]), z, w)
    check_op(lambda T, z: z.reshape(3, 2).transpose(0, 1).flatten(), z)
    check_op(lambda T, z: z.view(6).unsqueeze(0).expand(2, 6), z)
    check_op(lambda T, z: z.permute(1, 0).contiguous().view(-1)[2:], z)
    check_op(lambda T, z, w: T.where(z.real > 0, z, w), z, w)


def test_setitem_into_complex():
    check_op(lambda T, z, w: _setitem(z, w), rand(3, complex=True), rand(2, complex=True))


def _setitem(z, w):
    out = z * 1
    out[1:] = w
    return out


# -- casts ----------------------------------------------------------------------------------
def test_casts_between_real_and_complex():
    check_op(lambda T, x: x.to(T.complex128 if x.dtype == T.float64 else T.complex64), rand(3))
    check_op(lambda T, z, x: z.type_as(x), rand(3, complex=True), rand(3))
    check_op(lambda T, x, z: x.type_as(z) * z, rand(3), rand(3, complex=True))


def test_complex_to_real_cast_takes_the_real_part_and_warns_once():
    import tinyattn.ops.complex as cx

    cx._warned_discarding_imaginary = False
    z = tinyattn.tensor([1 + 2j, 3 - 4j])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert z.float().tolist() == [1.0, 3.0]
        assert z.double().dtype is tinyattn.float64 and z.long().tolist() == [1, 3]
    messages = [str(w.message) for w in caught]
    assert messages == ["Casting complex values to real discards the imaginary part"]


@needs_torch
def test_complex_to_real_cast_gradient_matches_torch():
    run_parity(lambda T, z: z.float() * 2 if z.dtype == T.complex64 else z.double() * 2,
               rand(3, complex=True))  # fmt: skip


# -- errors where torch refuses -------------------------------------------------------------
@pytest.mark.parametrize(
    "op",
    [
        lambda z: z < z,
        lambda z: z >= 1,
        lambda z: z.max(),
        lambda z: z.min(dim=0),
        lambda z: z.amax(),
        lambda z: z.argmax(),
        lambda z: tinyattn.sort(z),
        lambda z: z.topk(1),
        lambda z: z.clamp(0, 1),
        lambda z: tinyattn.maximum(z, z),
    ],
)
def test_ordering_ops_refuse_complex(op):
    with pytest.raises(RuntimeError, match="does not support complex input"):
        op(tinyattn.tensor([1 + 2j, 3 - 4j]))


def test_equality_works_on_complex():
    z = tinyattn.tensor([1 + 2j, 3 - 4j])
    assert (z == tinyattn.tensor([1 + 2j, 3 + 4j])).tolist() == [True, False]


def test_backward_of_a_complex_scalar_needs_a_gradient():
    z = tinyattn.tensor([1 + 2j], requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        z.sum().backward()
    z.sum().backward(tinyattn.tensor(1 + 0j))
    assert z.grad.tolist() == [1 + 0j]


def test_ops_without_a_complex_derivative_refuse_to_record():
    z = tinyattn.tensor([1 + 2j], requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative of this op for complex"):
        tinyattn.cumsum(z, 0)
    with tinyattn.no_grad():
        tinyattn.cumsum(z, 0)  # forward only: NumPy's complex cumsum, no gradient involved
        with pytest.raises(NotImplementedError, match="sigmoid.*complex"):
            tinyattn.sigmoid(z)  # a formula for real numbers: refused even without grad
        with pytest.raises(RuntimeError, match="complex"):
            tinyattn.relu(z)
        with pytest.raises(RuntimeError, match="complex"):
            tinyattn.softmax(z, 0)


def test_only_float_and_complex_tensors_require_grad():
    tinyattn.zeros(2, dtype=tinyattn.complex64).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point and complex"):
        tinyattn.zeros(2, dtype=tinyattn.int64).requires_grad_()


# -- gradcheck itself ----------------------------------------------------------------------
def test_gradcheck_catches_a_wrong_complex_gradient():
    """A backward without the conjugate (d(a*b)/da = g * b) fails, as it must."""
    from tinyattn.autograd.gradcheck import gradcheck

    class MulNoConj(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = tinyattn.tensor(rand(3, complex=True), requires_grad=True)
    b = tinyattn.tensor(rand(3, complex=True, seed=5), requires_grad=True)
    assert not gradcheck(MulNoConj.apply, (a, b), raise_exception=False)
    assert gradcheck(lambda a, b: a * b, (a, b))
    assert gradcheck(lambda a, b: a * b, (a, b), fast_mode=True)
    with pytest.raises(Exception, match=r"input\[0\]\[\(\d,\)\]\.(real|imag)"):
        gradcheck(MulNoConj.apply, (a, b))


@needs_torch
def test_gradcheck_agrees_with_torchs_on_the_same_functions():
    from tinyattn.autograd.gradcheck import gradcheck

    z = rand(3, complex=True)
    for f in (lambda T, z: z * z.conj(), lambda T, z: T.view_as_real(z * 2j)):
        ours = gradcheck(lambda t, f=f: f(tinyattn, t), (tinyattn.tensor(z, requires_grad=True),))
        theirs = torch.autograd.gradcheck(
            lambda t, f=f: f(torch, t), (torch.tensor(z, requires_grad=True),)
        )
        assert ours and theirs


# -- printing ---------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(
    "values",
    [
        np.array([1 + 2j, 3 - 4j, 0.5j]),
        np.array(1 + 2j),
        rand(2, 3, complex=True),
        np.zeros(0, complex),
        np.array([1e-5 + 1j, 3e4 - 2j]),
        rand(30, complex=True),
        np.array([np.inf + 1j, np.nan * 1j]),
    ],
)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_printing_matches_torch(values, dtype):
    ours = repr(tinyattn.tensor(values.astype(dtype))).replace("tinyattn.", "torch.")
    assert ours == repr(torch.tensor(values.astype(dtype)))


def test_gradcheck_alone_runs_without_torch():
    run_gradcheck(lambda T, z: (z * z).abs(), rand(3, complex=True))


# -- creation with complex dtypes, state dicts and checkpoints ------------------------------
def test_factories_with_complex_dtypes():
    assert tinyattn.zeros(2, dtype=tinyattn.cfloat).tolist() == [0j, 0j]
    assert tinyattn.full((2,), 1 + 1j).dtype is tinyattn.complex64
    assert complex(tinyattn.tensor(1 + 2j)) == 1 + 2j
    tinyattn.manual_seed(0)
    z = tinyattn.randn(20000, dtype=tinyattn.cdouble)
    # torch's complex normal: real and imaginary parts independent with variance 1/2
    assert abs(z.real.var().item() - 0.5) < 0.03 and abs(z.imag.var().item() - 0.5) < 0.03
    u = tinyattn.rand(1000, dtype=tinyattn.cfloat)
    assert u.dtype is tinyattn.complex64 and 0 <= u.imag.min().item() and u.imag.max() < 1


def test_complex_buffers_load_and_save(tmp_path):
    def build():
        module = tinyattn.nn.Module()
        module.register_buffer("freqs_cis", tinyattn.polar(tinyattn.ones(3), tinyattn.arange(3.0)))
        return module

    state = build().state_dict()
    assert state["freqs_cis"].dtype is tinyattn.complex64
    target = build()
    target.freqs_cis.zero_()
    target.load_state_dict(state)
    assert target.freqs_cis.tolist() == state["freqs_cis"].tolist()
    tinyattn.save(state, tmp_path / "rope.pt")
    loaded = tinyattn.load(tmp_path / "rope.pt")["freqs_cis"]
    assert loaded.dtype is tinyattn.complex64 and loaded.tolist() == state["freqs_cis"].tolist()
    real_target = tinyattn.nn.Module()
    real_target.register_buffer("freqs_cis", tinyattn.zeros(3))
    with pytest.raises(RuntimeError, match="imaginary part"):
        real_target.load_state_dict(state)


@pytest.mark.parametrize(
    "f",
    [
        lambda T, z: T.flip(z, [0]) * z,
        lambda T, z: T.roll(z, 1) - z,
        lambda T, z: z.repeat(2),
        lambda T, z: z.sgn(),
        lambda T, z: z.narrow(0, 1, 2).select(0, 1),
    ],
)
def test_more_ops_that_differentiate_complex(f):
    check_op(f, rand(3, complex=True))


@pytest.mark.parametrize("name", ["median", "kthvalue", "argsort"])
def test_more_ordering_ops_refuse_complex(name):
    z = tinyattn.tensor([1 + 2j, 3 - 4j])
    with pytest.raises(RuntimeError, match="does not support complex input"):
        getattr(tinyattn, name)(z, 1) if name == "kthvalue" else getattr(tinyattn, name)(z)


def test_complex_result_into_a_real_tensor_is_refused():
    with pytest.raises(RuntimeError, match="can't be cast"):
        tinyattn.ones(2).add_(tinyattn.tensor([1j, 2j]))
    with pytest.raises(RuntimeError, match="sgn"):
        tinyattn.sign(tinyattn.tensor([1j]))


def test_conjugate_transposes_and_vdot():
    a, v = rand(2, 3, complex=True), rand(3, complex=True, seed=6)
    check_op(lambda T, a: a.mH, a)
    check_op(lambda T, a: a.H @ a, a)
    check_op(lambda T, a: a[None].adjoint(), a)
    check_op(lambda T, v, w: T.vdot(v, w), v, rand(3, complex=True, seed=7))
    check_op(lambda T, v, w: T.dot(v, w), v, rand(3, complex=True, seed=7))
    x = tinyattn.ones(2, 3)
    assert x.mH.shape == (3, 2) and (x.H == x.t()).all()


def test_variance_and_norms_of_complex_tensors_are_real():
    """var = mean |z - mean|^2 (torch), norms of |z|: real results, gradients by the convention."""
    z = rand(2, 3, complex=True)
    check_op(lambda T, z: z.var(), z)
    check_op(lambda T, z: z.std(dim=1), z)
    check_op(lambda T, z: T.linalg.vector_norm(z, dim=1), z)
    check_op(lambda T, z: z.norm(), z)
    with pytest.raises(NotImplementedError, match="logsumexp"):
        tinyattn.logsumexp(tinyattn.tensor(z), 1)


@pytest.mark.parametrize(
    "f",
    [
        lambda T, z, w: z**w,
        lambda T, z, w: z**2 + z**0.5,
        lambda T, z, w: z ** (1 + 2j),
        lambda T, z, w: 2.0**z,
        lambda T, z, w: z**w.real,
        lambda T, z, w: w.real**z,
    ],
)
def test_pow_differentiates_complex_operands(f):
    z = rand(3, low=0.5, high=2, seed=4, complex=True)
    w = rand(3, low=0.5, high=2, seed=5, complex=True)
    check_op(f, z, w)
