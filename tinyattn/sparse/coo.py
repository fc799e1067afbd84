"""``SparseTensor``: torch's sparse COO tensor, with its dense array underneath.

A sparse tensor is a :class:`tinyattn.Tensor` (``isinstance`` holds, as in torch) whose
``layout`` is ``tinyattn.sparse_coo``. It keeps the COO form torch programs read —
``indices()`` int64 (sparse_dim, nnz), ``values()`` (nnz, *dense_dims), ``size`` — and,
underneath, the dense array those describe (duplicates summed), so that products and
gradients are the ordinary dense ones. Ops torch defines on sparse tensors and tinyattn
implements are listed in ``SUPPORTED``; any other op raises ``NotImplementedError`` naming
it, rather than quietly return a dense result (docs/sparse.md).
"""

from __future__ import annotations

import numpy as np

from ..ops.elementwise.arithmetic import Add, Sub
from ..ops.elementwise.unary import Cast, Clone
from ..ops.linalg.matmul import Matmul
from ..tensor_api.tensor import Tensor
from ..torch_surface.layouts import sparse_coo
from . import functions as F

# The ops that may read a sparse tensor's dense array (besides metadata: shape, dtype ...).
SUPPORTED: frozenset = frozenset(
    {F.SparseAssemble, F.SparseValues, F.SparseRelabel, F.SparseDenseMM, F.SparsePermute}
    | {Matmul, Cast, Clone}
)
# dense + sparse and dense - sparse give a dense tensor in torch (the sparse operand's
# gradient is the whole dense gradient); with the sparse operand first torch refuses.
DENSE_FIRST: frozenset = frozenset({Add, Sub})


class SparseTensor(Tensor):
    """A sparse COO tensor (``tinyattn.sparse_coo_tensor``, ``Tensor.to_sparse``)."""

    __slots__ = ()
    _indices_array: np.ndarray
    _coalesced: bool
    _raw_values: Tensor | None
    _grad_is_sparse: bool

    _op_guard = True  # Function.apply calls _check_op for each sparse input

    @staticmethod
    def _check_op(op: type, args: tuple) -> None:
        """Refuse ``op`` unless it is in ``SUPPORTED`` (or is ``dense + sparse``): asked by
        ``Function.apply`` when it unwraps a sparse input, so dense tensors pay nothing
        but one class-attribute check."""
        if op in DENSE_FIRST and _dense_first(args):
            return
        if op not in SUPPORTED or (op is Matmul and _all_sparse(args)):
            _refuse(op)

    # -- torch's sparse queries ------------------------------------------------------------
    @property
    def layout(self):
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    def sparse_dim(self) -> int:
        """How many leading dims are indexed (the rows of ``indices()``)."""
        return int(self._indices_array.shape[0])

    def dense_dim(self) -> int:
        """How many trailing dims each value has."""
        return self.ndim - self.sparse_dim()

    def _nnz(self) -> int:
        """The number of stored entries (duplicates counted until ``coalesce``)."""
        return int(self._indices_array.shape[1])

    def is_coalesced(self) -> bool:
        """True when the indices are sorted and unique (after ``coalesce`` / ``to_sparse``)."""
        return self._coalesced

    def indices(self) -> Tensor:
        """The int64 (sparse_dim, nnz) indices of a coalesced tensor."""
        self._need_coalesced("indices")
        return self._indices()

    def _indices(self) -> Tensor:
        """The int64 (sparse_dim, nnz) indices as stored (coalesced or not)."""
        return Tensor._make(self._indices_array.copy())

    def values(self) -> Tensor:
        """The (nnz, *dense_dims) values of a coalesced tensor (differentiable)."""
        self._need_coalesced("values")
        return self._values()

    def _values(self) -> Tensor:
        """The values as stored (coalesced or not; differentiable)."""
        raw = self._raw_values
        if raw is not None:  # (Module.double() ... replace the array only: follow its dtype)
            return raw if raw.dtype == self.dtype else raw.to(self.dtype)
        self._note_sparse_grad(True)
        return F.SparseValues.apply(self, self._indices_array)

    def _need_coalesced(self, what: str) -> None:
        if not self._coalesced:
            raise RuntimeError(
                f"Cannot get {what} on an uncoalesced tensor, please call .coalesce() first"
            )

    # -- conversions -------------------------------------------------------------------------
    def coalesce(self) -> SparseTensor:
        """The same tensor with sorted, unique indices (duplicate values summed)."""
        if self._coalesced:
            return self
        idx = np.unique(self._indices_array, axis=1)
        out = wrap(F.SparseRelabel.apply(self, idx, False, "CoalesceBackward0"), idx, True)
        out.__dict__["_sparse_source"] = self  # its gradient reaches self as it came
        return out

    def to_dense(self, dtype=None, *, masked_grad: bool = True) -> Tensor:
        """The dense tensor; its gradient reaches ``self`` masked to the sparsity pattern
        (``masked_grad=True``, torch's default) or whole."""
        out = F.SparseRelabel.apply(self, self._indices_array, masked_grad, "ToDenseBackward0")
        self._note_sparse_grad(masked_grad)
        return out if dtype is None else out.to(dtype)

    def to_sparse(
        self, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None
    ) -> SparseTensor:
        """``self`` (already sparse) when ``sparse_dim`` / ``dense_dim`` are its own."""
        same = sparse_dim in (None, self.sparse_dim()) and dense_dim in (None, self.dense_dim())
        if not same or layout not in (None, sparse_coo) or blocksize is not None:
            raise NotImplementedError(
                "to_sparse: converting a sparse tensor to another sparse_dim or layout is "
                "not supported in tinyattn (to_dense() first)"
            )
        return self

    def _note_sparse_grad(self, masked: bool) -> None:
        """A leaf's ``.grad`` is sparse (as torch's) once a masked-gradient op used it."""
        source = self.__dict__.get("_sparse_source")
        if masked and self.is_leaf:
            self.__dict__["_grad_is_sparse"] = True
        elif source is not None:
            source._note_sparse_grad(masked)

    @property
    def grad(self):
        """The accumulated gradient: sparse with ``self``'s pattern after ``to_dense``,
        ``values`` or ``sparse.mm``, dense after ``mm`` / ``@`` (as torch)."""
        g = self._grad
        if g is None or not self.__dict__.get("_grad_is_sparse", False):
            return g
        idx = np.unique(self._indices_array, axis=1)
        return wrap(Tensor._make(F.mask(g._data, idx)), idx, True)

    @grad.setter
    def grad(self, value) -> None:
        Tensor.grad.fset(self, value)  # type: ignore[attr-defined]

    # -- copies that keep the sparse form ------------------------------------------------------
    def detach(self) -> SparseTensor:
        """A sparse tensor sharing ``self``'s memory, outside the graph."""
        return _same_form(Tensor.detach(self), self, lambda v: v.detach())

    def clone(self, *, memory_format=None) -> SparseTensor:
        """A sparse copy (differentiable)."""
        copy = Tensor.clone(self, memory_format=memory_format)
        return _same_form(copy, self, lambda v: v.clone())

    def to(self, *args, **kwargs):  # type: ignore[override]
        """``Tensor.to``; a converted copy stays sparse (``float()``, ``double()`` ... too)."""
        out = Tensor.to(self, *args, **kwargs)
        return out if out is self else _same_form(out, self, lambda v: v.to(out.dtype))

    # -- dims: the indices' rows follow the dense dims ------------------------------------------
    def permute(self, *dims) -> SparseTensor:  # type: ignore[override]
        """The sparse tensor with its (sparse) dims reordered; uncoalesced, as torch's."""
        order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return self._permuted(order, "PermuteBackward0")

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:  # type: ignore[override]
        """The sparse tensor with two sparse dims swapped."""
        order = list(range(self.ndim))
        a, b = (_wrap_dim(d, self.ndim, "transpose") for d in (dim0, dim1))
        order[a], order[b] = order[b], order[a]
        return self._permuted(tuple(order), "TransposeBackward0")

    def t(self) -> SparseTensor:  # type: ignore[override]
        """The transpose of a sparse matrix (or the vector itself)."""
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return self if self.ndim < 2 else self._permuted((1, 0), "TBackward0")

    def _permuted(self, order: tuple, node_name: str) -> SparseTensor:
        wrapped = [_wrap_dim(d, self.ndim, "permute") for d in order]
        if sorted(wrapped) != list(range(self.ndim)):
            raise RuntimeError(
                f"permute(sparse_coo): dims {list(order)} are not a permutation of {self.ndim} dims"
            )
        sd = self.sparse_dim()
        if any(wrapped[i] != i for i in range(sd, self.ndim)):
            raise NotImplementedError(
                "permute: moving the dense dims of a hybrid sparse tensor is not supported in "
                "tinyattn (to_dense() first)"
            )
        indices = self._indices_array[wrapped[:sd]]
        dense = F.SparsePermute.apply(self, tuple(wrapped), node_name)
        out = wrap(dense, indices, self._coalesced and sd < 2)
        out.__dict__["_sparse_source"] = self  # a masked gradient reaches self sparse
        return out

    # -- products and the ops torch refuses on sparse tensors -----------------------------------
    def __matmul__(self, other):
        from .products import spmm

        return spmm(self, other)

    # -- elementwise ops with a sparse result (tinyattn/sparse/elementwise.py) ----------------
    def mul(self, other) -> SparseTensor:  # type: ignore[override]
        """``self * other`` (a number or a dense tensor): sparse, ``self``'s entries."""
        from . import elementwise

        return elementwise.mul(self, other)

    __mul__ = __rmul__ = mul  # type: ignore[assignment]

    def div(self, other, *, rounding_mode=None) -> SparseTensor:  # type: ignore[override]
        """``self / other`` (a number or a 0-d tensor): sparse, ``self``'s entries."""
        from . import elementwise

        if rounding_mode is not None:
            raise NotImplementedError(
                f"div(sparse, rounding_mode={rounding_mode!r}) is not supported in tinyattn"
            )
        return elementwise.div(self, other)

    def __truediv__(self, other) -> SparseTensor:  # type: ignore[override]
        return self.div(other)

    def neg(self) -> SparseTensor:  # type: ignore[override]
        """``-self``: sparse, ``self``'s entries."""
        from . import elementwise

        return elementwise.neg(self)

    __neg__ = neg  # type: ignore[assignment]

    def add(self, other, *, alpha=1) -> SparseTensor:  # type: ignore[override]
        """``self + alpha * other`` for a sparse ``other`` (``sparse + dense`` raises, as
        torch; ``dense + sparse`` is dense)."""
        from . import elementwise

        return elementwise.add(self, other, alpha)

    def sub(self, other, *, alpha=1) -> SparseTensor:  # type: ignore[override]
        """``self - alpha * other`` for a sparse ``other``."""
        from . import elementwise

        return elementwise.sub(self, other, alpha)

    def __add__(self, other) -> SparseTensor:  # type: ignore[override]
        return self.add(other)

    def __sub__(self, other) -> SparseTensor:  # type: ignore[override]
        return self.sub(other)

    def pow(self, exponent) -> SparseTensor:  # type: ignore[override]
        """``self ** exponent`` (a nonzero number): sparse, coalesced."""
        from . import elementwise

        return elementwise.pow(self, exponent)

    __pow__ = pow  # type: ignore[assignment]

    def abs(self) -> SparseTensor:  # type: ignore[override]
        """``|self|``: sparse, coalesced."""
        from . import elementwise

        return elementwise.abs(self)

    __abs__ = abs  # type: ignore[assignment]

    def relu(self) -> SparseTensor:  # type: ignore[override]
        """``max(self, 0)`` on the stored entries: sparse, coalesced."""
        from . import elementwise

        return elementwise.relu(self)

    def sum(self, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # type: ignore[override]
        """All entries: a 0-d dense tensor whose gradient is dense (as torch's
        ``SumBackward0``); over ``dim``: ``torch.sparse.sum(self, dim)``."""
        from .products import sum as sparse_sum

        if keepdim:
            raise NotImplementedError("sum(sparse, keepdim=True) is not supported, as in torch")
        if dim is not None:
            return sparse_sum(self, dim, dtype)
        total = self.to_dense(masked_grad=False).sum()
        return total if dtype is None else total.to(dtype)

    def mul_(self, other) -> SparseTensor:  # type: ignore[override]
        """``self *= other`` in place (the result is marked uncoalesced, as torch's)."""
        from ..ops.inplace import _write, check_inplace_allowed

        check_inplace_allowed(self, "mul_")
        result = self.mul(other)
        _write(self, result._data, "mul_")
        if result._requires_grad:
            self._grad_fn, self._requires_grad = result._grad_fn, True
        d = self.__dict__
        d["_raw_values"], d["_coalesced"] = result.__dict__["_raw_values"], False
        return self

    def __repr__(self) -> str:
        from .printing import sparse_repr

        return sparse_repr(self)

    __str__ = __repr__

    def __deepcopy__(self, memo) -> SparseTensor:
        return sparse_from(Tensor.__deepcopy__(self, memo), self)


def _dense_first(args) -> bool:
    return len(args) == 2 and isinstance(args[0], Tensor) and not isinstance(args[0], SparseTensor)


def _all_sparse(args) -> bool:
    """Sparse @ sparse: torch's result is sparse, which tinyattn does not make."""
    return all(isinstance(a, SparseTensor) for a in args)


def _refuse(fn: type) -> None:
    name = getattr(fn, "node_name", None) or fn.__name__
    raise NotImplementedError(
        f"{name}: this op is not implemented for sparse COO tensors in tinyattn; sparse "
        "tensors support to_dense, coalesce, indices/values, sparse.mm / spmm / mm / @ / "
        "sparse.addmm with a dense matrix, the methods and operators *, /, +, - (sparse), "
        "neg, pow, abs, relu, sum, mul_, and sparse.sum / softmax / log_softmax "
        "(docs/sparse.md); call .to_dense() first"
    )


def _wrap_dim(dim: int, ndim: int, name: str) -> int:
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"{name}: Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})"
        )
    return dim % ndim


def wrap(dense: Tensor, indices: np.ndarray, coalesced: bool, raw_values=None) -> SparseTensor:
    """Make the op output ``dense`` a sparse tensor with ``indices`` (no copy)."""
    dense.__class__ = SparseTensor
    d = dense.__dict__
    d["_indices_array"], d["_coalesced"], d["_raw_values"] = indices, coalesced, raw_values
    return dense  # type: ignore[return-value]


def _same_form(dense: Tensor, like: SparseTensor, on_values) -> SparseTensor:
    """``dense`` (a copy of ``like`` made by an op) with ``like``'s sparse form; stored
    uncoalesced values go through ``on_values`` (the same op)."""
    raw = like._raw_values
    return wrap(
        dense, like._indices_array, like._coalesced, None if raw is None else on_values(raw)
    )


def sparse_from(dense: Tensor, like: SparseTensor) -> SparseTensor:
    """``dense`` with ``like``'s sparse form (indices, coalesced flag)."""
    if type(dense) is not SparseTensor:
        wrap(dense, like._indices_array, like._coalesced)
    return dense  # type: ignore[return-value]
