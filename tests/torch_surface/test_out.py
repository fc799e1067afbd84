"""torch's ``out=`` keyword (tinyattn/torch_surface/out.py; the names: tinyattn/torch_surface/out_table.py).

The first part runs without torch; the parity part compares each case with torch 2.13:
values, dtype, ``out`` identity, resizing and its warning, dtype errors, the autograd error.
"""

from __future__ import annotations

import dis
import inspect
import warnings

import numpy as np
import pytest

import tinyattn
import tinyattn.linalg
import tinyattn.nn.functional as F
import tinyattn.special
from tinyattn.torch_surface import out_table as _out_names

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")

NAMESPACES = [
    (tinyattn, _out_names.OUT_TORCH),
    (tinyattn.linalg, _out_names.OUT_LINALG),
    (tinyattn.special, _out_names.OUT_SPECIAL),
    (F, _out_names.OUT_NN_FUNCTIONAL),
]
AUTOGRAD_ERROR = (
    "{}(): functions with out=... arguments don't support automatic differentiation, "
    "but one of the arguments requires grad."
)


def _version(t) -> int:
    return t._version.value


# -- without torch --------------------------------------------------------------------------


def test_the_name_lists_hold_the_tutorial_functions():
    assert len(_out_names.OUT_TORCH) >= 200
    for name in ("matmul", "mul", "rand", "zeros", "arange", "cat", "max", "sort", "topk", "sum"):
        assert name in _out_names.OUT_TORCH, name
    for name in ("norm", "vector_norm", "inv", "solve"):
        assert name in _out_names.OUT_LINALG, name
    # torch takes no out= for these (its parser says "unexpected keyword argument 'out'")
    for name in ("flip", "clone", "relu", "embedding", "zeros_like", "isnan", "std_mean"):
        assert name not in _out_names.OUT_TORCH, name


@pytest.mark.parametrize("namespace,names", NAMESPACES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_listed_name_takes_out_as_a_keyword_only_none(namespace, names):
    for name in names:
        fn = getattr(namespace, name)
        original = fn.__wrapped_for_out__
        param = inspect.signature(fn).parameters["out"]
        assert param.default is None, name
        assert param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD), name
        assert fn.__doc__ == original.__doc__ and fn.__name__ == original.__name__, name
        before = [p for p in inspect.signature(original).parameters if p != "out"]
        assert [p for p in inspect.signature(fn).parameters if p != "out"] == before, name


def test_the_signature_adds_out_after_the_keywords():
    sig = inspect.signature(tinyattn.matmul)
    assert list(sig.parameters) == ["input", "other", "out"]
    assert sig.parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    # for source readers
    assert inspect.unwrap(tinyattn.matmul) is tinyattn.ops.linalg.matmul.matmul
    assert tinyattn.matmul.__wrapped__(tinyattn.ones(1), tinyattn.ones(1)).item() == 1.0


def test_functions_that_had_an_ignored_out_parameter_now_honour_it():
    a = tinyattn.tensor([[3.0, 4.0]])
    calls = [
        (lambda out: tinyattn.zeros(3, out=out), [0.0, 0.0, 0.0]),
        (lambda out: tinyattn.ones(2, out=out), [1.0, 1.0]),
        (lambda out: tinyattn.tensordot(a, a, dims=([1], [1]), out=out), [[25.0]]),
        (lambda out: F.normalize(a, out=out), [[0.6, 0.8]]),
    ]
    for call, expected in calls:
        out = tinyattn.empty(0)
        assert call(out) is out
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def _public_names_in(code) -> set[str]:
    """Attributes read off the ``tinyattn`` module in ``code`` (and nested code)."""
    found = set()
    ins = list(dis.get_instructions(code))
    for a, b in zip(ins, ins[1:]):
        if a.argval == "tinyattn" and b.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            found.add(b.argval)
    for const in code.co_consts:
        if inspect.iscode(const):
            found |= _public_names_in(const)
    return found


def test_tensor_methods_do_not_call_the_wrapped_names():
    wrapped = set(_out_names.OUT_TORCH)
    calls = []
    for cls in tinyattn.Tensor.__mro__:
        for name, value in vars(cls).items():
            fn = getattr(getattr(value, "fget", value), "__func__", getattr(value, "fget", value))
            if hasattr(fn, "__code__"):
                calls += [(name, n) for n in _public_names_in(fn.__code__) & wrapped]
    assert not calls, calls


def test_tensor_methods_and_operators_work_with_the_public_names_gone(monkeypatch):
    def gone(*args, **kwargs):
        raise AssertionError("a Tensor method called a public (wrapped) function")

    a, b = tinyattn.ones(2, 3), tinyattn.ones(3, 2)
    for name in _out_names.OUT_TORCH:
        monkeypatch.setattr(tinyattn, name, gone)
    assert (a + a).sum().item() == 12 and (a * 2 - a / 2).shape == (2, 3)
    assert a.matmul(b).shape == (2, 2) and (a @ b).shape == (2, 2) and a.mm(b).shape == (2, 2)
    assert a.max(0).values.shape == (3,) and a.sort().indices.shape == (2, 3)
    assert a.exp().shape == (2, 3) and a.sum(0).shape == (3,) and a.topk(1).values.shape == (2, 1)
    assert a.hardshrink().shape == (2, 3) and a.clamp(0, 1).shape == (2, 3)


def test_the_result_is_written_into_out_and_out_is_returned():
    a = tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = tinyattn.empty(2, 2)
    version = _version(out)
    result = tinyattn.matmul(a, a, out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), (a @ a).numpy())
    assert _version(out) > version
    z = tinyattn.empty(0)
    assert tinyattn.mul(a, a, out=z) is z and z.tolist() == [[1.0, 4.0], [9.0, 16.0]]


def test_out_may_be_an_input_or_a_view_and_the_write_goes_through():
    a = tinyattn.tensor([1.0, 2.0])
    assert tinyattn.add(a, 1, out=a) is a and a.tolist() == [2.0, 3.0]
    b = tinyattn.ones(3)
    assert tinyattn.cumsum(b, 0, out=b).tolist() == [1.0, 2.0, 3.0]
    base = tinyattn.zeros(2, 3)
    tinyattn.exp(tinyattn.zeros(3), out=base[0])
    tinyattn.add(tinyattn.ones(2), 1, out=base[:, 2])
    assert base.tolist() == [[1.0, 1.0, 2.0], [0.0, 0.0, 2.0]]


def test_without_out_the_function_is_unchanged():
    a = tinyattn.tensor([1.0, 2.0])
    assert tinyattn.add(a, a).tolist() == [2.0, 4.0]
    assert tinyattn.add(a, a, out=None).tolist() == [2.0, 4.0]


def test_resize_warns_only_when_out_had_elements():
    a = tinyattn.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tinyattn.exp(a, out=tinyattn.empty(0))
    assert not caught
    out = tinyattn.zeros(2, 2)
    with pytest.warns(UserWarning, match=r"had shape \[2, 2\].*output shape \[3\]"):
        tinyattn.exp(a, out=out)
    assert out.shape == (3,)


def test_dtype_rules():
    a = tinyattn.ones(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast .* type Long"):
        tinyattn.mul(a, a, out=tinyattn.empty(0, dtype=tinyattn.int64))
    wide = tinyattn.mul(a, a, out=tinyattn.empty(0, dtype=tinyattn.float64))
    assert wide.dtype is tinyattn.float64 and wide.tolist() == [1.0, 1.0]
    assert tinyattn.eq(a, a, out=tinyattn.empty(0)).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="dtype float, but got double"):
        tinyattn.matmul(a, a, out=tinyattn.empty(0, dtype=tinyattn.float64))


def test_creation_functions_take_the_dtype_of_out():
    out = tinyattn.empty(0, dtype=tinyattn.int64)
    assert tinyattn.zeros(2, 2, out=out) is out and out.dtype is tinyattn.int64
    assert out.shape == (2, 2) and out.tolist() == [[0, 0], [0, 0]]
    r = tinyattn.rand(2, 3, out=tinyattn.empty(0, dtype=tinyattn.float64))
    assert r.dtype is tinyattn.float64 and r.shape == (2, 3)
    assert tinyattn.arange(4, out=tinyattn.empty(0)).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out parameter"):
        tinyattn.zeros(2, dtype=tinyattn.float32, out=out)


def test_out_must_be_a_tensor_or_a_tuple_of_them():
    a = tinyattn.ones(2, 2)
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not numpy.ndarray"):
        tinyattn.exp(a, out=np.zeros(2))
    with pytest.raises(TypeError, match="argument 'out' must be tuple of Tensors, not"):
        tinyattn.max(a, 0, out=tinyattn.empty(0))
    with pytest.raises(TypeError, match="'out'"):
        tinyattn.max(a, 0, out=(tinyattn.empty(0), 3))
    with pytest.raises(TypeError, match="'out'"):
        tinyattn.sort(a, out=(tinyattn.empty(0),))


def test_tuple_outs_are_filled_and_returned():
    x = tinyattn.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    values, indices = tinyattn.empty(0), tinyattn.empty(0, dtype=tinyattn.int64)
    result = tinyattn.sort(x, out=(values, indices))
    assert result.values is values and result.indices is indices
    assert values.tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    assert indices.tolist() == [[1, 2, 0], [0, 2, 1]]
    with pytest.raises(RuntimeError, match="dtype long int, but got float"):
        tinyattn.topk(x, 1, out=(tinyattn.empty(0), tinyattn.empty(0)))


def test_autograd_is_refused_in_grad_mode_and_allowed_under_no_grad():
    x = tinyattn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"exp\(\): functions with out=\.\.\. arguments"):
        tinyattn.exp(x, out=tinyattn.empty(0))
    with pytest.raises(RuntimeError, match=r"cat\(\): functions with out="):
        tinyattn.cat([x, x], out=tinyattn.empty(0))
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out="):
        tinyattn.add(x.detach(), 1, out=tinyattn.empty(0, requires_grad=True))
    with tinyattn.no_grad():
        out = tinyattn.empty(0, requires_grad=True)
        assert tinyattn.exp(x, out=out) is out and out.shape == (2,)


def test_the_write_bumps_the_version_so_a_saved_out_fails_backward():
    x = tinyattn.ones(3, requires_grad=True)
    w = tinyattn.full((3,), 2.0)
    y = (x * w).sum()  # the product saved w
    tinyattn.mul(tinyattn.ones(3), 3.0, out=w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_linalg_special_and_functional_names_take_out():
    a = tinyattn.tensor([[3.0, 4.0], [0.0, 0.0]])
    out = tinyattn.empty(0)
    assert tinyattn.linalg.norm(a, out=out) is out and out.item() == 5.0
    out = tinyattn.empty(0)
    assert tinyattn.special.expit(tinyattn.zeros(2), out=out).tolist() == [0.5, 0.5]
    out = tinyattn.empty(0)
    assert F.linear(a, tinyattn.eye(2), out=out) is out and out.tolist() == a.tolist()


# -- torch parity ---------------------------------------------------------------------------


@needs_torch
def test_the_stored_names_are_what_the_generator_derives_from_torch(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "tools" / "gen_out_names.py"
    spec = importlib.util.spec_from_file_location("gen_out_names", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen.main()
    stored = (path.parent.parent / "tinyattn" / "torch_surface" / "out_table.py").read_text()
    assert capsys.readouterr().out == stored


def _lib(T, x):
    return T.tensor(np.asarray(x, dtype=np.float32))


X = [[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]]
# name -> (function of the library, out's dtype name)
CASES = {
    "exp": lambda T, o: T.exp(_lib(T, X), out=o),
    "neg": lambda T, o: T.neg(_lib(T, X), out=o),
    "sqrt_abs": lambda T, o: T.sqrt(_lib(T, [1.0, 4.0]), out=o),
    "add_alpha": lambda T, o: T.add(_lib(T, X), _lib(T, X), alpha=2, out=o),
    "mul_scalar": lambda T, o: T.mul(_lib(T, X), 3.0, out=o),
    "div": lambda T, o: T.div(_lib(T, X), 2.0, out=o),
    "pow": lambda T, o: T.pow(_lib(T, X), 2, out=o),
    "maximum": lambda T, o: T.maximum(_lib(T, X), _lib(T, [0.0, 0.0, 0.0]), out=o),
    "gt": lambda T, o: T.gt(_lib(T, X), 0.0, out=o),
    "sum_dim": lambda T, o: T.sum(_lib(T, X), 1, out=o),
    "mean_dim_keep": lambda T, o: T.mean(_lib(T, X), 0, keepdim=True, out=o),
    "prod_dim": lambda T, o: T.prod(_lib(T, X), 1, out=o),
    "amax": lambda T, o: T.amax(_lib(T, X), 1, out=o),
    "cumsum": lambda T, o: T.cumsum(_lib(T, X), 1, out=o),
    "logsumexp": lambda T, o: T.logsumexp(_lib(T, X), 1, out=o),
    "max_all": lambda T, o: T.max(_lib(T, X), out=o),
    "matmul": lambda T, o: T.matmul(_lib(T, X), _lib(T, X).T, out=o),
    "mm": lambda T, o: T.mm(_lib(T, X).T, _lib(T, X), out=o),
    "bmm": lambda T, o: T.bmm(_lib(T, [X, X]), _lib(T, [X, X]).transpose(1, 2), out=o),
    "cat": lambda T, o: T.cat([_lib(T, X), _lib(T, X)], 1, out=o),
    "stack": lambda T, o: T.stack([_lib(T, X), _lib(T, X)], out=o),
    "where": lambda T, o: T.where(_lib(T, X) > 0, _lib(T, X), _lib(T, X) * 2, out=o),
    "clamp": lambda T, o: T.clamp(_lib(T, X), -1, 1, out=o),
    "zeros": lambda T, o: T.zeros(2, 3, out=o),
    "ones": lambda T, o: T.ones((3,), out=o),
    "arange": lambda T, o: T.arange(1, 7, 2, out=o),
    "linspace": lambda T, o: T.linspace(0, 1, 5, out=o),
    "full": lambda T, o: T.full((2,), 7.0, out=o),
    "eye": lambda T, o: T.eye(3, out=o),
    "linalg_norm": lambda T, o: T.linalg.norm(_lib(T, X), out=o),
    "linalg_vector_norm": lambda T, o: T.linalg.vector_norm(_lib(T, X), 1, dim=1, out=o),
    "special_expit": lambda T, o: T.special.expit(_lib(T, X), out=o),
}
OUT_DTYPES = ["float32", "float64", "int64", "bool"]


def _attempt(f, T, out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = f(T, out)
        except (RuntimeError, TypeError, NotImplementedError) as e:
            return type(e), str(e).split("(Triggered")[0].strip()
    # (torch warns twice for some ops: once per resize check; the text is what counts)
    messages = sorted({str(w.message).split(" (Triggered")[0] for w in caught})
    return result, messages


# torch has no bool kernel for these ("not implemented for 'Bool'"); tinyattn computes the
# creation ops (cumsum refuses as torch does, with its NotImplementedError)
BOOL_KERNEL_GAPS = {
    ("arange", "bool"): False,
    ("linspace", "bool"): False,
}
# bugs of the ops themselves (ops/*.py, not the out= wrapper)
OPS_BUGS = {("prod_dim", "bool"): "tinyattn.prod(x, 1, dtype=tinyattn.bool) returns int64"}
MESSAGES_WE_GIVE = ("can't be cast", "does not match dtype", "Expected out tensor", "Found dtype")


@needs_torch
@pytest.mark.parametrize("shape", [(0,), (2, 2)], ids=["empty", "other_shape"])
@pytest.mark.parametrize("dtype", OUT_DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case, dtype, shape):
    f = CASES[case]
    mine_out = tinyattn.zeros(shape, dtype=getattr(tinyattn, dtype))
    their_out = torch.zeros(shape, dtype=getattr(torch, dtype))
    mine, theirs = _attempt(f, tinyattn, mine_out), _attempt(f, torch, their_out)
    if (case, dtype) in OPS_BUGS:
        pytest.xfail(OPS_BUGS[case, dtype])
    if (case, dtype) in BOOL_KERNEL_GAPS:
        assert theirs[0] is NotImplementedError
        assert (mine[0] is RuntimeError) is BOOL_KERNEL_GAPS[case, dtype], mine
        return
    if isinstance(theirs[0], type):  # torch refused: so do we, with its exception type
        assert isinstance(mine[0], type), (case, dtype, theirs[1], mine[0])
        assert mine[0] is theirs[0], (mine, theirs)
        if any(m in theirs[1] for m in MESSAGES_WE_GIVE):
            assert mine[1] == theirs[1]
        return
    assert not isinstance(mine[0], type), (case, dtype, mine[1], "torch accepted it")
    assert mine[0] is mine_out and theirs[0] is their_out
    assert mine_out.dtype.name == str(their_out.dtype).removeprefix("torch.")
    assert tuple(mine_out.shape) == tuple(their_out.shape)
    np.testing.assert_allclose(
        mine_out.numpy().astype(np.float64), their_out.numpy().astype(np.float64), rtol=1e-6
    )
    assert mine[1] == theirs[1]  # the resize warning, word for word (or none)


@needs_torch
@pytest.mark.parametrize("case", ["max_dim", "min_dim", "sort", "topk", "kthvalue", "cummax"])
@pytest.mark.parametrize("index_dtype", ["int64", "float32"])
def test_tuple_out_parity_with_torch(case, index_dtype):
    calls = {
        "max_dim": lambda T, x, o: T.max(x, 1, out=o),
        "min_dim": lambda T, x, o: T.min(x, 0, keepdim=True, out=o),
        "sort": lambda T, x, o: T.sort(x, 1, descending=True, out=o),
        "topk": lambda T, x, o: T.topk(x, 2, out=o),
        "kthvalue": lambda T, x, o: T.kthvalue(x, 2, out=o),
        "cummax": lambda T, x, o: T.cummax(x, 1, out=o),
    }
    results = []
    for T in (tinyattn, torch):
        out = (T.empty(0), T.empty(0, dtype=getattr(T, index_dtype)))
        try:
            got = calls[case](T, _lib(T, X), out)
        except RuntimeError:
            results.append(("error",))
            continue
        assert got[0] is out[0] and got[1] is out[1]
        assert got.values is out[0] and got.indices is out[1]
        results.append(([o.numpy().tolist() for o in out], [str(o.dtype) for o in out]))
    mine, theirs = results
    assert mine[0] == theirs[0]  # both refuse float indices (in their words), or same values


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda T, x: T.exp(x, out=T.empty(0)),
        lambda T, x: T.add(x, x, out=T.empty(0)),
        lambda T, x: T.matmul(x, x.T, out=T.empty(0)),
        lambda T, x: T.sum(x, 0, out=T.empty(0)),
        lambda T, x: T.cat([x, x], out=T.empty(0)),
        lambda T, x: T.max(x, 1, out=(T.empty(0), T.empty(0, dtype=T.int64))),
    ],
)
def test_autograd_error_parity_with_torch(call):
    messages = []
    for T in (tinyattn, torch):
        x = _lib(T, X).requires_grad_(True)
        with pytest.raises(RuntimeError) as info:
            call(T, x)
        messages.append(str(info.value))
        with T.no_grad():
            call(T, x)  # fine there
    assert messages[0] == messages[1]


@needs_torch
def test_out_type_error_parity_with_torch():
    for T in (tinyattn, torch):
        with pytest.raises(TypeError, match=r"exp\(\): argument 'out' must be Tensor, not int"):
            T.exp(T.ones(2), out=3)


@needs_torch
def test_version_error_parity_with_torch():
    for T in (tinyattn, torch):
        x, w = T.ones(3, requires_grad=True), T.full((3,), 2.0)
        y = (x * w).sum()
        T.mul(T.ones(3), 3.0, out=w)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


# -- every listed name that torch runs on these simple arguments ------------------------------

SWEEP_X = np.array([[0.5, 0.9, 2.0], [1.5, 0.25, 3.0], [0.7, 1.1, 0.3]], dtype=np.float32)
SWEEP_ARGS = [  # tried in turn: the first that torch accepts with out= is used
    lambda T: (T.tensor(SWEEP_X),),
    lambda T: (T.tensor(SWEEP_X), T.tensor(SWEEP_X)),
    lambda T: (T.tensor(SWEEP_X), 1),
    lambda T: (T.tensor(SWEEP_X), T.tensor(SWEEP_X), T.tensor(SWEEP_X)),
    lambda T: ([T.tensor(SWEEP_X), T.tensor(SWEEP_X)],),
]
RANDOM = {"rand", "randn", "bernoulli", "multinomial", "normal", "randint", "randperm", "empty"}
SIGN_FREE = {"eigh"}  # eigenvectors are defined up to sign


def _empty_like_result(T, result):
    def empty(t):
        return T.empty(0, dtype=getattr(T, str(t.dtype).removeprefix("torch.")))

    return tuple(empty(r) for r in result) if isinstance(result, tuple) else empty(result)


def _sweep_one(mine, theirs, name):
    """None if torch takes none of SWEEP_ARGS with out=, else tinyattn's and torch's outs."""
    for args in SWEEP_ARGS:
        try:
            plain = getattr(theirs, name)(*args(torch))
            their_out = _empty_like_result(torch, plain)
            got = getattr(theirs, name)(*args(torch), out=their_out)
        except Exception:
            continue
        # (torch's list-out forms, unbind_copy ..., return None)
        assert got is their_out or got is None or all(a is b for a, b in zip(got, their_out))
        my_out = _empty_like_result(tinyattn, plain)
        result = getattr(mine, name)(*args(tinyattn), out=my_out)
        several = isinstance(my_out, tuple)
        assert all(a is b for a, b in zip(result, my_out)) if several else result is my_out, name
        return (my_out, their_out) if several else ((my_out,), (their_out,))
    return None


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("namespace,names", NAMESPACES, ids=lambda x: getattr(x, "__name__", ""))
def test_sweep_of_the_listed_names_against_torch(namespace, names):
    theirs_ns = {
        "tinyattn": torch,
        "tinyattn.linalg": torch.linalg,
        "tinyattn.special": torch.special,
        "tinyattn.nn.functional": torch.nn.functional,
    }[namespace.__name__]
    compared = 0
    for name in names:
        pair = _sweep_one(namespace, theirs_ns, name)
        if pair is None:
            continue
        compared += 1
        for mine, theirs in zip(*pair):
            a, b = mine.numpy(), theirs.numpy()
            assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, b.shape, a.dtype)
            if name in SIGN_FREE:
                a, b = np.abs(a), np.abs(b)
            if name not in RANDOM:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
    # the sweep itself reaches most names (not vacuously green)
    assert compared >= {"tinyattn": 170, "tinyattn.linalg": 18, "tinyattn.special": 25}.get(
        namespace.__name__, 6
    )


def test_composites_record_the_graph_through_out_and_comparisons_just_run():
    assert {"softmax", "linalg_norm", "eq", "argmax"} <= set(_out_names.ALLOWS_GRAD)
    x = tinyattn.tensor([3.0, 4.0], requires_grad=True)
    out = tinyattn.empty(0)
    assert tinyattn.linalg.norm(x, out=out) is out and out.requires_grad
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    flags = tinyattn.empty(0, dtype=tinyattn.bool)
    assert tinyattn.eq(x, 3.0, out=flags).tolist() == [True, False] and not flags.requires_grad


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda T, x: T.inner(x, x, out=T.empty(0)),
        lambda T, x: T.linalg.norm(x, out=T.empty(0)),
        lambda T, x: T.special.ndtr(x, out=T.empty(0)),
        lambda T, x: T.tensordot(x, x, 1, out=T.empty(0)),
    ],
)
def test_graph_through_out_parity_with_torch(call):
    grads = []
    for T in (tinyattn, torch):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        out = call(T, x)
        (out * T.tensor(2.0)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


# torch decides these per overload: a tensor bound or exponent 1 casts, a scalar one does not
# (tinyattn follows the scalar form, the usual one: clamp(x, 0, 1, out=...)).
DTYPE_BY_OVERLOAD = {"clamp", "clamp_min", "clamp_max", "clip", "chain_matmul", "matrix_power"}


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("namespace,names", NAMESPACES, ids=lambda x: getattr(x, "__name__", ""))
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_sweep_out_dtype_accepted_or_refused_as_torch(namespace, names, dtype):
    """float32 results into a float64 / int64 out: torch casts or refuses; so do we."""
    theirs_ns = {
        "tinyattn": torch,
        "tinyattn.linalg": torch.linalg,
        "tinyattn.special": torch.special,
        "tinyattn.nn.functional": torch.nn.functional,
    }[namespace.__name__]
    checked, differ = 0, []
    for name in sorted(set(names) - DTYPE_BY_OVERLOAD):
        for args in SWEEP_ARGS:
            try:
                plain = getattr(theirs_ns, name)(*args(torch))
                getattr(theirs_ns, name)(*args(torch), out=_empty_like_result(torch, plain))
            except Exception:
                continue
            if isinstance(plain, tuple) or plain.dtype != torch.float32:
                break
            refused = []
            for lib, ns in ((torch, theirs_ns), (tinyattn, namespace)):
                try:
                    getattr(ns, name)(*args(lib), out=lib.empty(0, dtype=getattr(lib, dtype)))
                    refused.append(False)
                except (RuntimeError, NotImplementedError, TypeError):
                    refused.append(True)
            checked += 1
            if refused[0] != refused[1]:
                differ.append(f"{name}: torch refuses {refused[0]}, tinyattn {refused[1]}")
            break
    assert not differ, differ
    assert checked >= {"tinyattn": 100, "tinyattn.linalg": 8}.get(namespace.__name__, 4), checked


def _with_grad(T, args):
    """``args`` with the first tensor (or the first of a list) requiring grad."""
    first = args[0]
    if isinstance(first, list):
        return ([first[0].requires_grad_(True), *first[1:]], *args[1:])
    return (first.requires_grad_(True), *args[1:])


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("namespace,names", NAMESPACES, ids=lambda x: getattr(x, "__name__", ""))
def test_sweep_autograd_refusal_as_torch(namespace, names):
    """An input that requires grad: torch refuses (naming its op) or records; so do we."""
    theirs_ns = {
        "tinyattn": torch,
        "tinyattn.linalg": torch.linalg,
        "tinyattn.special": torch.special,
        "tinyattn.nn.functional": torch.nn.functional,
    }[namespace.__name__]
    checked, differ = 0, []
    for name in names:
        for args in SWEEP_ARGS:
            try:
                plain = getattr(theirs_ns, name)(*args(torch))
                getattr(theirs_ns, name)(*args(torch), out=_empty_like_result(torch, plain))
            except Exception:
                continue
            said = []
            for lib, ns in ((torch, theirs_ns), (tinyattn, namespace)):
                try:
                    getattr(ns, name)(
                        *_with_grad(lib, args(lib)), out=_empty_like_result(lib, plain)
                    )
                    said.append(None)
                except RuntimeError as e:
                    said.append(str(e))
            checked += 1
            if said[0] != said[1]:
                differ.append(f"{name}: torch {said[0]!r}, tinyattn {said[1]!r}")
            break
    assert not differ, differ
    assert checked >= {"tinyattn": 170, "tinyattn.linalg": 18}.get(namespace.__name__, 6)
