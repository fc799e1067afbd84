"""Property tests against torch: type promotion, broadcasting and reductions of every dtype.

Hypothesis draws small tensors of any tinyattn dtype (bool, int8/16/32/64, uint8, float16/32/64,
0-d and size-0 included) and Python scalars, applies a binary op, comparison, reduction or
scan, and requires tinyattn to give torch's dtype, shape and values -- or to raise
where torch raises. Values are drawn so that results stay exact (small integers, halves),
so equality is checked exactly except for float16/float32 transcendental results.

Known, documented differences are skipped by ``_known`` with the reason.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tinyattn

torch = pytest.importorskip("torch")

SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@st.composite
def shapes(draw, max_dims: int = 3):
    """Shapes of 0-3 dims with sizes 0-3 (size-1 and size-0 dims for broadcasting)."""
    return tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=max_dims)))


@st.composite
def arrays(draw, shape=None, dtype=None):
    shape = draw(shapes()) if shape is None else shape
    dtype = dtype or draw(st.sampled_from(DTYPES))
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype == "uint8":
        values = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    elif dtype.startswith("int"):
        values = draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))
    else:
        values = [v / 2 for v in draw(st.lists(st.integers(-12, 12), min_size=n, max_size=n))]
    return np.array(values, dtype=dtype).reshape(shape)


def broadcastable(shape):
    """A shape that broadcasts with ``shape`` (dims dropped, set to 1, or kept)."""
    return (
        st.lists(st.sampled_from(["keep", "one"]), min_size=len(shape), max_size=len(shape))
        .map(lambda how: tuple(1 if h == "one" else s for h, s in zip(how, shape)))
        .flatmap(lambda s: st.integers(0, len(s)).map(lambda k: s[k:]))
    )


SCALARS = st.sampled_from([2, -3, 0, 1, True, False, 2.5, -0.5, 0.0])


def _tensor(lib, a):
    t = lib.tensor(a.tolist() if a.ndim else a.item(), dtype=getattr(lib, str(a.dtype)))
    return t.reshape(a.shape)  # (an empty list loses the shape of a size-0 array)


def _run(fn):
    """(result, None) or (None, exception), with torch's deprecation warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # any error counts as "raised"
            return None, e


def _compare(got, want, exact: bool = True) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, exact)
        return
    if not isinstance(want, torch.Tensor):
        assert got == want
        return
    assert isinstance(got, tinyattn.Tensor), type(got)
    assert got.dtype.name == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    g, w = got.detach().numpy(), want.detach().numpy()
    if exact or g.dtype.kind != "f":
        np.testing.assert_array_equal(g, w)
    else:
        tol = 1e-2 if g.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _both(f, *operands, exact: bool = True, known=None, strict_errors: bool = False) -> None:
    """Run ``f(lib, *operands)`` (arrays become tensors) on both libraries and compare.

    tinyattn may compute where torch refuses (std of ints, argmax of bools, ...) unless
    ``strict_errors``; it must never raise where torch computes, nor differ from it.
    """
    ours = [_tensor(tinyattn, o) if isinstance(o, np.ndarray) else o for o in operands]
    theirs = [_tensor(torch, o) if isinstance(o, np.ndarray) else o for o in operands]
    want, t_err = _run(lambda: f(torch, *theirs))
    got, o_err = _run(lambda: f(tinyattn, *ours))
    note(f"torch: {want!r} {t_err!r}\ntinyattn: {got!r} {o_err!r}")
    if known is not None and known(operands, want, t_err):
        return
    if t_err is not None:
        assert o_err is not None or not strict_errors, f"torch raised {t_err!r}, tinyattn {got!r}"
        return
    assert o_err is None, f"tinyattn raised {o_err!r}, torch gave {want!r}"
    _compare(got, want, exact)


def _unsigned_with_negative(operands) -> bool:
    """torch wraps a negative Python int into uint8 (``u8 < -3`` is True); NumPy refuses or
    compares by value. A documented difference (tests/reliability/test_silent_differences.py)."""
    has_u8 = any(isinstance(o, np.ndarray) and o.dtype == np.uint8 for o in operands)
    negative_int = any(
        (type(o) is int or (isinstance(o, np.ndarray) and o.dtype.kind == "i")) and np.any(o < 0)
        for o in operands
    )
    return has_u8 and negative_int


def _median_of_empty_integers(operands, want, t_err) -> bool:
    """torch's median of an empty integer tensor is an arbitrary value (INT64_MIN, or 0 for
    uint8); tinyattn raises instead of inventing one."""
    a = operands[0]
    return a.size == 0 and a.dtype.kind in "iub" and t_err is None


ARITH = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "ne": operator.ne,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}
NAMED = ["maximum", "minimum", "fmod", "remainder", "atan2", "fmax", "eq", "gt", "logical_and"]


def _known_binary(operands, want, t_err) -> bool:
    if _unsigned_with_negative(operands):
        return True
    # bool // bool, bool ** bool: torch raises (not implemented); tinyattn computes in int8
    return False


@SETTINGS
@given(st.data())
def test_binary_ops_promote_and_broadcast_as_torch(data):
    a = data.draw(arrays(), label="a")
    if data.draw(st.booleans(), label="scalar"):
        b = data.draw(SCALARS, label="b")
    else:
        b = data.draw(arrays(shape=data.draw(broadcastable(a.shape))), label="b")
    if data.draw(st.booleans(), label="swap"):
        a, b = b, a
    name = data.draw(st.sampled_from(sorted(ARITH) + NAMED), label="op")
    if name in ARITH:
        op = ARITH[name]
        f = lambda lib, x, y: op(x, y)  # noqa: E731
    else:
        if not isinstance(a, np.ndarray):
            a, b = b, a  # the named functions take a tensor first
        f = lambda lib, x, y: getattr(lib, name)(x, y)  # noqa: E731
    exact = name not in ("atan2", "pow", "truediv")
    _both(f, a, b, exact=exact, known=_known_binary)


REDUCTIONS = ["sum", "prod", "mean", "amax", "amin", "all", "any", "nansum", "count_nonzero"]
DIM_REDUCTIONS = ["max", "min", "argmax", "argmin", "median", "logsumexp", "std", "var"]


@st.composite
def dims(draw, ndim: int):
    """None, an int, or a tuple of distinct dims (negative ones too, possibly empty)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    span = max(ndim, 1)
    if kind == "int":
        return draw(st.integers(-span, span - 1))
    picked = draw(st.lists(st.integers(0, span - 1), unique=True, max_size=span))
    return tuple(d - span if draw(st.booleans()) else d for d in picked)


@SETTINGS
@given(st.data())
def test_reductions_over_dims_as_torch(data):
    """Sums, products, extremes and logical reductions over any dims, keepdim, empty input."""
    a = data.draw(arrays(), label="a")
    name = data.draw(st.sampled_from(REDUCTIONS + DIM_REDUCTIONS), label="op")
    dim = data.draw(dims(a.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    if name in DIM_REDUCTIONS and not isinstance(dim, int):
        dim = None if name in ("max", "min", "median", "argmax", "argmin") else dim
    if name == "count_nonzero":
        f = lambda lib, x: lib.count_nonzero(x, dim)  # noqa: E731
    elif dim is None and name in ("max", "min", "median"):
        f = lambda lib, x: getattr(lib, name)(x)  # noqa: E731
    elif dim is None and name in ("std", "var", "logsumexp"):
        if name == "logsumexp":
            return
        f = lambda lib, x: getattr(lib, name)(x)  # noqa: E731
    else:
        f = lambda lib, x: getattr(lib, name)(x, dim, keepdim=keepdim)  # noqa: E731
    exact = name not in ("mean", "logsumexp", "std", "var")
    _both(f, a, exact=exact, known=_median_of_empty_integers if name == "median" else None)


@SETTINGS
@given(st.data())
def test_scans_as_torch(data):
    a = data.draw(arrays(), label="a")
    name = data.draw(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]))
    dim = data.draw(st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1), label="dim")
    dtype = data.draw(
        st.sampled_from([None, "int32", "int64", "float32", "float64"]), label="dtype"
    )
    if dtype is None or name not in ("cumsum", "cumprod"):
        f = lambda lib, x: getattr(lib, name)(x, dim)  # noqa: E731
    else:
        f = lambda lib, x: getattr(lib, name)(x, dim, dtype=getattr(lib, dtype))  # noqa: E731
    _both(f, a, exact=name != "logcumsumexp")


@SETTINGS
@given(st.data())
def test_where_clamp_masked_fill_dtypes_as_torch(data):
    """where/clamp/masked_fill with tensors, 0-d tensors and Python scalars of every kind."""
    a = data.draw(arrays(), label="a")

    def other():
        if data.draw(st.booleans()):
            return data.draw(SCALARS)
        return data.draw(arrays(shape=data.draw(broadcastable(a.shape))))

    b = other()
    name = data.draw(
        st.sampled_from(["where", "where_swapped", "clamp_min", "clamp_max", "masked_fill"])
    )
    if name == "where":
        f = lambda lib, x, y: lib.where(x > 0, x, y)  # noqa: E731
    elif name == "where_swapped":
        f = lambda lib, x, y: lib.where(x > 0, y, x)  # noqa: E731
    elif name == "clamp_min":
        f = lambda lib, x, y: lib.clamp(x, min=y)  # noqa: E731
    elif name == "clamp_max":
        f = lambda lib, x, y: lib.clamp(x, max=y)  # noqa: E731
    else:
        if isinstance(b, np.ndarray):
            b = b.reshape(-1)[:1].reshape(()) if b.size else data.draw(SCALARS)
        f = lambda lib, x, y: x.masked_fill(x > 0, y)  # noqa: E731
    _both(f, a, b, known=_known_binary)


@SETTINGS
@given(st.data())
def test_empty_reductions_give_torch_values_or_errors(data):
    """Reductions of size-0 tensors: sum 0, prod 1, mean NaN, max/argmax raise, ... as torch."""
    shape = data.draw(shapes().filter(lambda s: 0 in s), label="shape")
    a = data.draw(
        arrays(shape=shape, dtype=data.draw(st.sampled_from(["int64", "float32", "bool"])))
    )
    name = data.draw(st.sampled_from(REDUCTIONS + DIM_REDUCTIONS), label="op")
    dim = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    if dim is None:
        f = lambda lib, x: getattr(lib, name)(x)  # noqa: E731
    elif name == "count_nonzero":
        f = lambda lib, x: lib.count_nonzero(x, dim)  # noqa: E731
    else:
        f = lambda lib, x: getattr(lib, name)(x, dim, keepdim=keepdim)  # noqa: E731
    strict = a.dtype.kind == "f" or name in ("sum", "prod", "all", "any", "amax", "max")
    known = _median_of_empty_integers if name == "median" else None
    _both(f, a, exact=False, strict_errors=strict, known=known)
