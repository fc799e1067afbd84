"""Differential testing of the tensor core against torch: random *programs*.

Hypothesis draws a short program (3-8 statements) over a few float64 leaf
tensors: arithmetic with broadcasting and Python scalars, unary math,
reductions, views, indexing, cat/stack/split/chunk, matmul/einsum,
softmax, masked_fill/where/gather and in-place ops on non-leaf tensors and
on views of them. Every statement is Python source that runs unchanged with
``lib = torch`` and with ``lib = tinyattn``; after each statement every
variable is compared (dtype, shape, values, requires_grad) -- in-place
writes through views must show up in the bases too. At the end a random
weighted sum of the last differentiable value is backpropagated and every
leaf gradient compared at 1e-10.

Second order (``create_graph=True``): before that backward, the same weighted sum
is differentiated with ``autograd.grad(..., create_graph=True)``; those gradients
must equal torch's and (after the backward) tinyattn's own first-order ones, and
the gradient of a random weighted sum of them (a Hessian-vector product) must
match torch's. Programs whose graph holds an op still in ``FIRST_ORDER_ONLY``
skip this part; the reason is noted and the skipped ops are collected in
``SECOND_ORDER_SKIPPED``.

When torch raises, tinyattn must raise too. When tinyattn raises and torch
does not, the test fails unless the difference is listed in
``KNOWN_DIFFERENCES`` with its reason.

A failing example prints the whole program (copy it into a REPL with
``import torch as lib`` or ``import tinyattn as lib``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from harness import _function_classes
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tinyattn

torch = pytest.importorskip("torch")

# ops (class names) that made a program skip its second-order check: FIRST_ORDER_ONLY ones
SECOND_ORDER_SKIPPED: set[str] = set()

# (regex on the statement, regex on tinyattn's error message, why the difference is accepted)
KNOWN_DIFFERENCES: list[tuple[str, str, str]] = [
    (
        r"\.mT\b",
        r"transpose\(\): dimension out of range",
        "torch 2.13 deprecates .mT on 0-d tensors (identity with a warning); tinyattn raises",
    ),
    (
        r"lib\.cat\(",
        r"cat\(\): dimension out of range",
        "torch's legacy rule lets 1-D empty tensors join a cat along any dim; tinyattn checks "
        "dim against their one dim (no tutorial relies on it)",
    ),
]

SETTINGS = settings(
    max_examples=70,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)

FLOAT_SCALARS = ["2.5", "-1.5", "0.5", "3", "-2", "1e-3"]


class Program:
    """A program under construction: runs every statement on torch and tinyattn side by side."""

    def __init__(self, data) -> None:
        self.draw = data.draw
        self.lines: list[str] = []
        self.ns = {"torch": {"lib": torch}, "tinyattn": {"lib": tinyattn}}
        self.names: list[str] = []  # tensor variables, in order of creation
        self.leaves: list[str] = []
        self.n = 0

    # -- helpers for the generators ----------------------------------------------------------
    def t(self, name: str):
        """The torch value of a variable (the generators read shapes and dtypes from it)."""
        return self.ns["torch"][name]

    def floats(self) -> list[str]:
        return [n for n in self.names if self.t(n).dtype == torch.float64]

    def pick(self, names: list[str]) -> str:
        return self.draw(st.sampled_from(names))

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def program_text(self) -> str:
        return "\n".join(self.lines)

    def fail(self, msg: str) -> None:
        pytest.fail(f"{msg}\n--- program ---\n{self.program_text()}", pytrace=False)

    # -- running ------------------------------------------------------------------------------
    def leaf(self, shape: tuple[int, ...], seed: int) -> None:
        values = np.round(np.random.default_rng(seed).uniform(-2, 2, size=shape), 2).tolist()
        name = f"x{len(self.leaves)}"
        self.run(f"{name} = lib.tensor({values!r}, dtype=lib.float64, requires_grad=True)", name)
        self.leaves.append(name)

    def run(self, line: str, target: str | None = None) -> bool:
        """Run one statement on both libraries; False if both raised (the statement is dropped)."""
        self.lines.append(line)
        note(line)
        errors = {}
        for lib, ns in self.ns.items():
            try:
                exec(line, ns)
            except Exception as e:
                errors[lib] = e
        if "torch" in errors and "tinyattn" not in errors:
            self.fail(f"torch raised {errors['torch']!r} but tinyattn did not")
        if "tinyattn" in errors and "torch" not in errors:
            err = errors["tinyattn"]
            for stmt_re, msg_re, _why in KNOWN_DIFFERENCES:
                if re.search(stmt_re, line) and re.search(msg_re, str(err)):
                    self.lines[-1] = f"# known difference, tinyattn raised: {line}"
                    for ns in self.ns.values():
                        ns.pop(target, None)
                    return False
            self.fail(f"tinyattn raised {type(err).__name__}: {err} but torch did not")
        if errors:
            self.lines[-1] = f"{line}  # both raise: {type(errors['torch']).__name__}"
            self.compare_all()  # a failed statement must leave everything unchanged
            return False
        if target is not None and target not in self.names:
            self.names.append(target)
        self.compare_all()
        return True

    def compare_all(self) -> None:
        for name in self.names:
            self.compare(name, self.ns["torch"][name], self.ns["tinyattn"][name])

    def compare(self, name: str, want, got) -> None:
        if not isinstance(got, tinyattn.Tensor):
            self.fail(f"{name}: tinyattn gave {type(got).__name__}, torch a Tensor")
        if str(want.dtype).split(".")[-1] != got.dtype.name:
            self.fail(f"{name}: dtype {got.dtype}, torch {want.dtype}")
        if tuple(want.shape) != tuple(got.shape):
            self.fail(f"{name}: shape {tuple(got.shape)}, torch {tuple(want.shape)}")
        if want.requires_grad != got.requires_grad:
            self.fail(f"{name}: requires_grad {got.requires_grad}, torch {want.requires_grad}")
        w, g = want.detach().numpy(), got.detach().numpy()
        if not np.allclose(g, w, rtol=1e-10, atol=1e-10, equal_nan=True):
            self.fail(f"{name}: values differ\ntinyattn:\n{g}\ntorch:\n{w}")

    def backward(self, seed: int) -> None:
        candidates = [n for n in self.names if self.t(n).requires_grad]
        if not candidates:
            return
        out = candidates[-1]
        w = np.round(np.random.default_rng(seed).uniform(-1, 1, self.t(out).shape), 2).tolist()
        loss = f"({out} * lib.tensor({w!r}, dtype=lib.float64)).sum()"
        first = self.second_order(loss, out, seed)
        line = f"{loss}.backward()"
        self.lines.append(line)
        note(line)
        errors = {}
        for lib, ns in self.ns.items():
            try:
                exec(line, ns)
            except Exception as e:
                errors[lib] = e
        if set(errors) == {"torch"}:
            self.fail(f"backward: torch raised {errors['torch']!r} but tinyattn did not")
        if set(errors) == {"tinyattn"}:
            self.fail(f"backward: tinyattn raised {errors['tinyattn']!r} but torch did not")
        if errors:
            return
        for leaf in self.leaves:
            gw, gt = self.ns["torch"][leaf].grad, self.ns["tinyattn"][leaf].grad
            if (gw is None) != (gt is None):
                self.fail(f"{leaf}.grad: tinyattn {gt}, torch {gw}")
            if gw is None:
                continue
            gw, gt = gw.numpy(), gt.numpy()
            if gw.shape != gt.shape or not np.allclose(
                gt, gw, rtol=1e-10, atol=1e-10, equal_nan=True
            ):
                self.fail(f"{leaf}.grad differs\ntinyattn:\n{gt}\ntorch:\n{gw}")
        for leaf, g in (first or {}).items():  # create_graph gives the first-order values
            plain = self.ns["tinyattn"][leaf].grad
            if (g is None) != (plain is None) or (
                g is not None
                and not np.allclose(g, plain.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)
            ):
                self.fail(f"{leaf}: create_graph gradient {g} differs from first order {plain}")

    def second_order(self, loss: str, out: str, seed: int) -> dict | None:
        """Gradients with create_graph (compared to torch's), then a Hessian-vector product.

        Returns tinyattn's create_graph gradients (arrays or None per leaf), or None when
        skipped (an op without create_graph support, or a statement torch refuses).
        """
        classes = _function_classes([self.ns["tinyattn"][out]])
        lacking = sorted(c.__name__ for c in classes if not c.supports_create_graph)
        if lacking:
            note(f"second order skipped: {lacking} do not support create_graph (FIRST_ORDER_ONLY)")
            SECOND_ORDER_SKIPPED.update(lacking)
            return None
        leaves = ", ".join(self.leaves)
        rng = np.random.default_rng(seed + 1)
        ws = [np.round(rng.uniform(-1, 1, self.t(x).shape), 2).tolist() for x in self.leaves]
        lines = [
            f"g2 = lib.autograd.grad({loss}, [{leaves}], create_graph=True, allow_unused=True)",
            "t2 = [(g * lib.tensor(w, dtype=lib.float64)).sum() for g, w in zip(g2, "
            f"{ws!r}) if g is not None and g.requires_grad]",
            f"h2 = lib.autograd.grad(sum(t2), [{leaves}], allow_unused=True, retain_graph=True)"
            " if t2 else [None] * len(g2)",
        ]
        for line in lines:
            note(line)
        errors = {}
        for lib, ns in self.ns.items():
            try:
                for line in lines:
                    exec(line, ns)
            except Exception as e:
                errors[lib] = e
        if set(errors) == {"tinyattn"}:
            self.fail(f"second order: tinyattn raised {errors['tinyattn']!r} but torch did not")
        if errors:
            return None
        kinds = ("g2", "h2")
        if not all(
            g is None or np.isfinite(g.detach().numpy()).all() for g in self.ns["tinyattn"]["g2"]
        ):
            note("second derivative not compared: a first-order gradient is NaN or infinite")
            kinds = ("g2",)
        dense = {}
        for kind in kinds:
            for x, gw, gt in zip(self.leaves, self.ns["torch"][kind], self.ns["tinyattn"][kind]):
                shape = tuple(self.t(x).shape)
                gw = np.zeros(shape) if gw is None else gw.detach().numpy(force=True)
                dense[x, kind] = gt  # (the first-order gradients are returned as they are)
                gt = np.zeros(shape) if gt is None else gt.detach().numpy()
                if not np.allclose(gt, gw, rtol=1e-9, atol=1e-9, equal_nan=True):
                    what = "create_graph gradient" if kind == "g2" else "second derivative"
                    self.fail(f"{x}: {what} differs\ntinyattn:\n{gt}\ntorch:\n{gw}")
        return {
            x: None if dense[x, "g2"] is None else dense[x, "g2"].detach().numpy()
            for x in self.leaves
        }


# -- statement generators: each returns (source, target) or None when not applicable ----------


def _broadcast_ok(a, b) -> bool:
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        return True
    except ValueError:
        return False


def _dim(p: Program, ndim: int, allow_bad: bool = True) -> int:
    if ndim == 0:
        return p.draw(st.sampled_from([0, -1]))
    lo, hi = (
        (-ndim - 1, ndim) if allow_bad and p.draw(st.integers(0, 19)) == 0 else (-ndim, ndim - 1)
    )
    return p.draw(st.integers(lo, hi))


def _operand(p: Program, a: str) -> str:
    """Another operand for a binary op with ``a``: a scalar, a broadcastable variable, any variable."""
    kind = p.draw(st.sampled_from(["scalar", "var", "var", "any"]))
    if kind == "scalar":
        return p.draw(st.sampled_from(FLOAT_SCALARS))
    ok = [n for n in p.floats() if _broadcast_ok(p.t(a), p.t(n))]
    return p.pick(ok if kind == "var" and ok else p.floats())


def g_binary(p: Program, a: str):
    op = p.draw(st.sampled_from(["+", "-", "*", "/", "+", "*"]))
    b = _operand(p, a)
    if p.draw(st.booleans()):
        a, b = b, a
    return f"{a} {op} {b}"


def g_binary_fn(p: Program, a: str):
    fn = p.draw(st.sampled_from(["lib.maximum", "lib.minimum", "lib.add", "lib.sub", "lib.mul"]))
    b = p.pick([n for n in p.floats() if _broadcast_ok(p.t(a), p.t(n))] or p.floats())
    return f"{fn}({a}, {b})"


def g_pow(p: Program, a: str):
    return p.draw(
        st.sampled_from([f"{a} ** 2", f"{a} ** 3", f"2.0 ** {a}", f"{a}.pow(2)", f"{a}.square()"])
    )


def g_unary(p: Program, a: str):
    m = p.draw(
        st.sampled_from(
            "exp tanh sigmoid sin cos neg abs relu square log1p_abs sqrt_abs clone contiguous".split()
        )
    )
    if m == "log1p_abs":
        return f"{a}.abs().log1p()"
    if m == "sqrt_abs":
        return f"({a}.abs() + 0.5).sqrt()"
    return p.draw(st.sampled_from([f"{a}.{m}()", f"lib.{m}({a})"]))


def g_clamp(p: Program, a: str):
    lo, hi = p.draw(st.sampled_from([("-0.5", "0.5"), ("None", "0.3"), ("-0.2", "None")]))
    return f"{a}.clamp({lo}, {hi})"


def g_reduce(p: Program, a: str):
    t = p.t(a)
    fn = p.draw(
        st.sampled_from(
            "sum mean amax amin max min prod logsumexp var std norm argmax cumsum".split()
        )
    )
    keep = p.draw(st.booleans())
    if fn == "cumsum":
        return f"{a}.cumsum({_dim(p, t.ndim)})"
    if p.draw(st.integers(0, 3)) == 0 and fn not in ("logsumexp",):
        return f"{a}.{fn}()"
    if fn in ("sum", "mean", "amax", "amin") and t.ndim >= 2 and p.draw(st.booleans()):
        dims = p.draw(st.sampled_from([(0, 1), (-1, 0), (0, -2)]))
        return f"{a}.{fn}(dim={dims}, keepdim={keep})"
    d = _dim(p, t.ndim)
    if fn in ("max", "min"):
        part = p.draw(st.sampled_from(["[0]", ".values", ".indices", "[1]"]))
        return f"{a}.{fn}(dim={d}, keepdim={keep}){part}"
    if fn == "norm":
        return f"{a}.norm(dim={d}, keepdim={keep})"
    return f"{a}.{fn}(dim={d}, keepdim={keep})"


def g_view(p: Program, a: str):
    t = p.t(a)
    nd, shape = t.ndim, tuple(t.shape)
    kind = p.draw(
        st.sampled_from(
            "view reshape flatten transpose permute T mT expand squeeze unsqueeze narrow select "
            "movedim t".split()
        )
    )
    if kind in ("view", "reshape"):
        options = [(-1,), (1,) + shape, shape + (1,)]
        if nd >= 2:
            options.append(shape[:-2] + (shape[-2] * shape[-1],))
            options.append((shape[0], -1))
        if nd >= 1 and shape[-1] % 2 == 0 and shape[-1]:
            options.append(shape[:-1] + (2, shape[-1] // 2))
        new = p.draw(st.sampled_from(options))
        return f"{a}.{kind}({', '.join(map(str, new))})" if new else f"{a}.{kind}(())"
    if kind == "flatten":
        return f"{a}.flatten()" if nd < 2 else f"{a}.flatten({_dim(p, nd)})"
    if kind == "transpose":
        return f"{a}.transpose({_dim(p, nd)}, {_dim(p, nd)})"
    if kind == "permute":
        perm = p.draw(st.permutations(list(range(nd))))
        return f"{a}.permute({', '.join(map(str, perm))})" if nd else f"{a}.permute(())"
    if kind in ("T", "mT"):
        return f"{a}.{kind}"
    if kind == "t":
        return f"{a}.t()"
    if kind == "expand":
        new = tuple(p.draw(st.sampled_from([2, 3])) if s == 1 else s for s in shape)
        lead = p.draw(st.sampled_from([(), (2,)]))
        args = lead + tuple(
            -1 if p.draw(st.booleans()) and s == o else s for s, o in zip(new, shape)
        )
        return f"{a}.expand({', '.join(map(str, args))})" if args else f"{a}.expand(())"
    if kind == "squeeze":
        return f"{a}.squeeze()" if p.draw(st.booleans()) else f"{a}.squeeze({_dim(p, nd)})"
    if kind == "unsqueeze":
        return f"{a}.unsqueeze({p.draw(st.integers(-nd - 1, nd))})"
    if kind == "movedim":
        return f"{a}.movedim({_dim(p, nd)}, {_dim(p, nd)})"
    if nd == 0:
        return None
    d = _dim(p, nd, allow_bad=False)
    n = shape[d]
    if kind == "narrow":
        start = p.draw(st.integers(0, max(n - 1, 0)))
        length = p.draw(st.integers(0, n - start))
        return f"{a}.narrow({d}, {start}, {length})"
    return f"{a}.select({d}, {p.draw(st.integers(-n - 1, n))})"


def _index_item(p: Program, n: int) -> str:
    kind = p.draw(st.sampled_from(["int", "slice", "slice", "none", "tensor", "list"]))
    if kind == "int":
        return str(p.draw(st.integers(-n - 1, n)) if n else 0)
    if kind == "slice":
        start = p.draw(st.sampled_from(["", "1", "-1", "0", "-2"]))
        stop = p.draw(st.sampled_from(["", "2", "-1", "5"]))
        step = p.draw(st.sampled_from(["", "", ":2", ":3"]))
        return f"{start}:{stop}{step}"
    if kind == "none":
        return "None"
    vals = p.draw(st.lists(st.integers(-n, max(n - 1, 0)), min_size=1, max_size=3))
    if kind == "list":
        return repr(vals)
    shape2 = p.draw(st.booleans()) and len(vals) % 2 == 0
    arr = np.array(vals).reshape(2, -1).tolist() if shape2 else vals
    return f"lib.tensor({arr!r})"


def g_index(p: Program, a: str):
    t = p.t(a)
    nd, shape = t.ndim, tuple(t.shape)
    kind = p.draw(st.sampled_from(["basic", "basic", "mask_self", "mask", "ellipsis"]))
    if kind == "mask_self":
        return f"{a}[{a} > 0]"
    if kind == "mask":
        k = p.draw(st.integers(0, nd))
        bits = np.random.default_rng(p.draw(st.integers(0, 99))).random(shape[:k]) > 0.5
        return f"{a}[lib.tensor({bits.tolist()!r})]"
    n_items = p.draw(st.integers(1, max(nd, 1)))
    items = [_index_item(p, shape[i] if i < nd else 1) for i in range(n_items)]
    if kind == "ellipsis":
        items.insert(p.draw(st.integers(0, len(items))), "...")
    return f"{a}[{', '.join(items)}]"


def g_cat(p: Program, a: str):
    t = p.t(a)
    nd = t.ndim
    same = [n for n in p.floats() if p.t(n).ndim == nd]
    b = p.pick(same)
    kind = p.draw(st.sampled_from(["cat", "stack", "split", "chunk", "unbind"]))
    d = _dim(p, nd)
    if kind == "cat":
        return f"lib.cat([{a}, {b}], dim={d})"
    if kind == "stack":
        d = p.draw(st.integers(-nd - 1, nd))
        return f"lib.stack([{a}, {b}], dim={d})"
    if nd == 0:
        return None
    i = p.draw(st.integers(0, 1))
    if kind == "split":
        size = p.draw(st.sampled_from(["1", "2", "[1, 1]"]))
        return f"{a}.split({size}, dim={d})[{i}]"
    if kind == "chunk":
        return f"{a}.chunk({p.draw(st.integers(1, 3))}, dim={d})[{i}]"
    return f"{a}.unbind({d})[{i}]"


def g_matmul(p: Program, a: str):
    t = p.t(a)
    kind = p.draw(st.sampled_from(["matmul_any", "gram", "gram", "einsum"]))
    if kind == "matmul_any":
        b = p.pick(p.floats())
        return f"{a} @ {b}" if p.draw(st.booleans()) else f"lib.matmul({a}, {b})"
    if kind == "gram":
        return f"{a} @ {a}.mT" if t.ndim >= 2 else f"{a} @ {a}"
    eqs = {
        0: ["->", ","],
        1: ["i->", "i,i->", "i,j->ij"],
        2: ["ij->ji", "ij,kj->ik", "ij->", "ii->i", "ij,ij->i"],
        3: ["bij,bkj->bik", "...ij->...ji", "bij->bj", "...ij,...ij->..."],
    }[min(t.ndim, 3)]
    eq = p.draw(st.sampled_from(eqs))
    if eq == ",":
        return f"lib.einsum(',->', {a}, {a})"
    args = ", ".join([a] * (eq.split("->")[0].count(",") + 1))
    return f"lib.einsum('{eq}', {args})"


def g_softmax(p: Program, a: str):
    fn = p.draw(st.sampled_from(["softmax", "log_softmax"]))
    d = _dim(p, p.t(a).ndim)
    return p.draw(st.sampled_from([f"{a}.{fn}({d})", f"lib.{fn}({a}, dim={d})"]))


def g_masked(p: Program, a: str):
    b = p.pick([n for n in p.floats() if _broadcast_ok(p.t(a), p.t(n))] or p.floats())
    kind = p.draw(st.sampled_from(["masked_fill", "where", "where_scalar", "gather"]))
    if kind == "masked_fill":
        v = p.draw(st.sampled_from(["0.0", "-1e9", "float('-inf')", "2"]))
        if v == "float('-inf')":
            return f"{a}.masked_fill({b} > 0, {v}).exp()"
        return f"{a}.masked_fill({b} > 0, {v})"
    if kind == "where":
        return f"lib.where({b} > 0, {a}, {b})"
    if kind == "where_scalar":
        return f"lib.where({a} > 0, {a}, 0.0)"
    t = p.t(a)
    if t.ndim == 0:
        return None
    d = _dim(p, t.ndim, allow_bad=False)
    shape = list(t.shape)
    n = shape[d]
    shape[d] = p.draw(st.integers(1, 3))
    idx = np.random.default_rng(p.draw(st.integers(0, 99))).integers(0, max(n, 1), size=shape)
    if n == 0 or p.draw(st.integers(0, 9)) == 0:
        idx.flat[0] = n  # out of range: both must raise
    return f"{a}.gather({d}, lib.tensor({idx.tolist()!r}))"


def g_inplace(p: Program, a: str):
    """In-place ops; ``a`` may be a leaf (both raise), a non-leaf, or a view of one."""
    b = _operand(p, a)
    t = p.t(a)
    kind = p.draw(
        st.sampled_from(
            ["add_", "mul_", "iadd", "imul", "masked_fill_", "setitem", "clamp_", "sub_", "div_"]
        )
    )
    if kind in ("add_", "mul_", "sub_", "div_"):
        return f"{a}.{kind}({b})", None
    if kind == "iadd":
        return f"{a} += {b}", None
    if kind == "imul":
        return f"{a} *= {b}", None
    if kind == "masked_fill_":
        b = p.pick([n for n in p.floats() if _broadcast_ok(p.t(a), p.t(n))] or p.floats())
        return f"{a}.masked_fill_({b} > 0, {p.draw(st.sampled_from(['0.0', '-3.0']))})", None
    if kind == "clamp_":
        return f"{a}.clamp_(-0.5, 0.5)", None
    nd = t.ndim
    n_items = p.draw(st.integers(1, max(nd, 1)))
    idx = ", ".join(_index_item(p, t.shape[i] if i < nd else 1) for i in range(n_items))
    if p.draw(st.integers(0, 2)) == 0:
        idx = f"{a} > 0"
    value = p.draw(st.sampled_from(["scalar", "var"]))
    if value == "scalar":
        return f"{a}[{idx}] = {p.draw(st.sampled_from(FLOAT_SCALARS))}", None
    # The value is cloned: torch's setitem with a value that partially overlaps the target
    # either raises or gives a memory-order dependent result (``a[:, 1:] = a[:, :2]``), where
    # tinyattn (NumPy) reads the whole value before writing; that is not a difference to chase.
    return f"{a}[{idx}] = {p.pick(p.floats())}.clone()", None


def g_view_inplace(p: Program, a: str):
    """Take a view and write through it in one statement (``a[0].mul_(2)``, ``a.t().add_(1)``)."""
    t = p.t(a)
    if t.ndim == 0:
        return None
    view = p.draw(
        st.sampled_from([f"{a}[0]", f"{a}[..., 1:]", f"{a}.transpose(0, -1)", f"{a}.view(-1)"])
    )
    op = p.draw(st.sampled_from(["mul_(2.0)", "add_(1.0)", "zero_()", "clamp_(min=0.0)"]))
    return f"{view}.{op}", None


GENERATORS = {
    "binary": g_binary,
    "binary_fn": g_binary_fn,
    "pow": g_pow,
    "unary": g_unary,
    "clamp": g_clamp,
    "reduce": g_reduce,
    "view": g_view,
    "index": g_index,
    "cat": g_cat,
    "matmul": g_matmul,
    "softmax": g_softmax,
    "masked": g_masked,
    "inplace": g_inplace,
    "view_inplace": g_view_inplace,
}


@st.composite
def _shape(draw, max_dims: int = 3) -> tuple[int, ...]:
    nd = draw(st.integers(0, max_dims))
    return tuple(draw(st.sampled_from([1, 2, 3, 3, 2, 0] if nd else [1])) for _ in range(nd))


def run_program(data, families: list[str]) -> None:
    p = Program(data)
    base = data.draw(_shape())
    p.leaf(base, data.draw(st.integers(0, 1000)))
    for _ in range(data.draw(st.integers(0, 2))):
        # a second leaf: broadcast-compatible with the first (a suffix, some dims 1) or not
        k = data.draw(st.integers(0, len(base)))
        other = tuple(1 if data.draw(st.booleans()) else s for s in base[k:])
        if data.draw(st.integers(0, 5)) == 0:
            other = data.draw(_shape())
        p.leaf(other, data.draw(st.integers(0, 1000)))
    # most programs start from a non-leaf so the in-place ops have something to write to
    if data.draw(st.integers(0, 4)):
        p.run(f"v0 = {p.leaves[0]} * 1.0", "v0")
    for _ in range(data.draw(st.integers(3, 8))):
        fam = data.draw(st.sampled_from(families))
        a = p.pick(p.floats())
        out = GENERATORS[fam](p, a)
        if out is None:
            continue
        if isinstance(out, tuple):
            p.run(out[0])
        else:
            name = p.fresh()
            p.run(f"{name} = {out}", name)
    p.backward(data.draw(st.integers(0, 1000)))


MATH = ["binary", "binary_fn", "pow", "unary", "clamp", "reduce", "softmax", "matmul"]
SHAPES = ["view", "index", "cat", "binary", "reduce", "masked"]
INPLACE = ["inplace", "view_inplace", "view", "index", "binary", "unary"]


@SETTINGS
@given(st.data())
def test_programs_math(data):
    run_program(data, MATH)


@SETTINGS
@given(st.data())
def test_programs_shapes_and_indexing(data):
    run_program(data, SHAPES)


@SETTINGS
@given(st.data())
def test_programs_inplace(data):
    run_program(data, INPLACE)


@SETTINGS
@given(st.data())
def test_programs_everything(data):
    run_program(data, list(GENERATORS))
