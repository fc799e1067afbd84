"""Property tests against torch: indexing and index assignment, values and gradients.

Hypothesis draws a float64 tensor of 1-4 small dims and an index built from ints
(negative ones too), slices (negative steps excluded, as torch refuses them), None,
Ellipsis, bool masks, int tensors and int lists -- advanced indices adjacent or
separated by a slice, which moves their dims to the front (torch's and NumPy's rule).
``x[index]`` must give torch's shape and values and the same gradient; ``y[index] = v``
(``v`` a number, a broadcast tensor or a tensor with duplicate targets, on a
non-leaf) must give torch's result and gradients for ``x`` and ``v``.
Duplicate targets in assignment keep an unspecified writer in torch, so those cases
compare only which elements changed and the gradients of ``x``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tinyattn

torch = pytest.importorskip("torch")

SETTINGS = settings(
    max_examples=80,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@st.composite
def index_parts(draw, shape):
    """One index (a tuple of parts, as ``repr``-able specs) valid or not for ``shape``."""
    parts = []
    dim = 0
    used_ellipsis = False
    n = draw(st.integers(1, min(len(shape) + 1, 4)))
    for _ in range(n):
        kinds = ["int", "slice", "none", "list", "tensor"]
        if not used_ellipsis:
            kinds.append("ellipsis")
        if dim < len(shape):
            kinds.append("mask")
        kind = draw(st.sampled_from(kinds))
        size = shape[dim] if dim < len(shape) else 1
        if kind == "int":
            parts.append(("int", draw(st.integers(-size, max(size - 1, 0)))))
            dim += 1
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            parts.append(("slice", (start, stop, step)))
            dim += 1
        elif kind == "none":
            parts.append(("none", None))
        elif kind == "ellipsis":
            parts.append(("ellipsis", None))
            used_ellipsis = True
            dim = max(dim, len(shape) - (n - len(parts)))
        elif kind == "mask":
            rest = shape[dim : dim + draw(st.integers(1, max(1, min(2, len(shape) - dim))))]
            bits = draw(
                st.lists(st.booleans(), min_size=int(np.prod(rest)), max_size=int(np.prod(rest)))
            )
            parts.append(("mask", np.array(bits, dtype=bool).reshape(rest)))
            dim += len(rest)
        else:
            ishape = draw(st.sampled_from([(2,), (1,), (0,), (2, 1), (3,)]))
            values = draw(
                st.lists(
                    st.integers(-size, max(size - 1, 0)),
                    min_size=int(np.prod(ishape)),
                    max_size=int(np.prod(ishape)),
                )
            )
            arr = np.array(values, dtype=np.int64).reshape(ishape)
            parts.append((kind, arr))
            dim += 1
    return parts


def _index(lib, parts):
    out = []
    for kind, v in parts:
        if kind == "int":
            out.append(v)
        elif kind == "slice":
            out.append(slice(*v))
        elif kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "mask":
            out.append(lib.tensor(v.tolist()).reshape(v.shape))
        elif kind == "list":
            out.append(v.tolist())
        else:
            out.append(lib.tensor(v.tolist(), dtype=lib.int64).reshape(v.shape))
    return tuple(out)


def _describe(parts) -> str:
    def one(kind, v):
        if kind == "slice":
            return ":".join("" if x is None else str(x) for x in v)
        if kind in ("mask", "tensor"):
            return f"{kind}({v.tolist()})"
        return {"none": "None", "ellipsis": "..."}.get(
            kind, repr(v if kind != "list" else v.tolist())
        )

    return "[" + ", ".join(one(k, v) for k, v in parts) + "]"


def _run(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # any error counts as "raised"
            return None, e


def _leaf(lib, values):
    return lib.tensor(values.tolist(), dtype=lib.float64).reshape(values.shape).requires_grad_(True)


def _assert_close(got, want, what: str) -> None:
    assert tuple(got.shape) == tuple(want.shape), (what, tuple(got.shape), tuple(want.shape))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), err_msg=what)


@st.composite
def tensors(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 1
    return values


@SETTINGS
@given(st.data())
def test_getitem_values_and_gradients_as_torch(data):
    x = data.draw(tensors(), label="x")
    parts = data.draw(index_parts(x.shape), label="index")
    note(f"x.shape={x.shape} index={_describe(parts)}")
    results = {}
    for name, lib in (("torch", torch), ("tinyattn", tinyattn)):
        leaf = _leaf(lib, x)

        def go(lib=lib, leaf=leaf):
            out = leaf[_index(lib, parts)]
            seed = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))
            (out * lib.tensor(seed)).sum().backward()
            return out, leaf.grad

        results[name] = _run(go)
    (want, t_err), (got, o_err) = results["torch"], results["tinyattn"]
    if t_err is not None:
        assert o_err is not None, f"torch raised {t_err!r}, tinyattn gave {got!r}"
        return
    assert o_err is None, f"tinyattn raised {o_err!r}; torch gave shape {tuple(want[0].shape)}"
    _assert_close(got[0], want[0], "values")
    _assert_close(got[1], want[1], "gradient")


def _has_duplicates(x_shape, parts) -> bool:
    """Whether an index selects some element twice (then torch's writer is unspecified)."""
    probe = np.arange(int(np.prod(x_shape))).reshape(x_shape)
    idx = []
    for kind, v in parts:
        idx.append(
            {"int": v, "slice": slice(*v) if kind == "slice" else None, "none": None}.get(kind, v)
            if kind in ("int", "slice", "none")
            else (Ellipsis if kind == "ellipsis" else v)
        )
    try:
        picked = probe[tuple(idx)].ravel()
    except IndexError:
        return False
    return len(np.unique(picked)) != len(picked)


@SETTINGS
@given(st.data())
def test_setitem_values_and_gradients_as_torch(data):
    x = data.draw(tensors(), label="x")
    parts = data.draw(index_parts(x.shape), label="index")
    how = data.draw(st.sampled_from(["number", "broadcast", "full"]), label="value")
    note(f"x.shape={x.shape} index={_describe(parts)} value={how}")
    target = _run(lambda: torch.zeros(x.shape)[_index(torch, parts)].shape)[0]
    if target is None:
        return  # an index torch refuses (covered by the getitem test)
    target = tuple(target)
    if how == "broadcast":
        vshape = target[1:] if target else ()
    else:
        vshape = target
    vvalues = -np.arange(int(np.prod(vshape)), dtype=np.float64).reshape(vshape) - 0.5
    duplicates = _has_duplicates(x.shape, parts)
    results = {}
    for name, lib in (("torch", torch), ("tinyattn", tinyattn)):
        leaf, v = _leaf(lib, x), _leaf(lib, vvalues)

        def go(lib=lib, leaf=leaf, v=v):
            y = leaf * 1.0
            y[_index(lib, parts)] = 7.0 if how == "number" else v
            seed = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))
            (y * lib.tensor(seed)).sum().backward()
            return y, leaf.grad, v.grad

        results[name] = _run(go)
    (want, t_err), (got, o_err) = results["torch"], results["tinyattn"]
    if t_err is not None:
        assert o_err is not None, f"torch raised {t_err!r}, tinyattn gave {got!r}"
        return
    assert o_err is None, f"tinyattn raised {o_err!r}"
    _assert_close(got[1], want[1], "gradient of x")
    if duplicates and how != "number":
        changed_o = got[0].detach().numpy() != x
        changed_t = want[0].detach().numpy() != x
        np.testing.assert_array_equal(changed_o, changed_t)
        return
    _assert_close(got[0], want[0], "values")
    if how != "number":
        assert (got[2] is None) == (want[2] is None)
        if want[2] is not None:
            _assert_close(got[2], want[2], "gradient of the value")
