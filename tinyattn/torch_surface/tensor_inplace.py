"""Tensor methods public programs call beyond the op families: in-place forms of composite ops (``addmm_``,
``lerp_``, ``cumsum_`` ...), in-place view changes (``t_``, ``transpose_``), memory
management (``resize_``, ``set_``, ``new``, ``new_empty_strided``), elementwise Python
callables (``apply_``, ``map_``, ``map2_``) and ``register_post_accumulate_grad_hook``.

The in-place forms of composite ops compute the out-of-place op and ``copy_`` it into
``self``: autograd then sees ``self_new = copy(op(self_old, ...))``, whose gradient is
the op's. The op reads a ``clone`` of ``self`` when a graph is recorded, so what it saves
for backward is not overwritten by the write.
"""

from __future__ import annotations

import builtins
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..foundations.type_names import type_name

if TYPE_CHECKING:
    from ..core.tensor import Tensor


def _ops():
    from .. import ops

    return ops


def _sizes(args, op: str) -> tuple[int, ...]:
    """``f(2, 3)`` or ``f((2, 3))`` -> ``(2, 3)``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for n in args:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{op}(): sizes must be ints, got {args!r}")
    return tuple(int(n) for n in args)


class TensorInplaceMethods:
    """Mixin of :class:`tinyattn.Tensor`."""

    def split(self, split_size, dim: int = 0) -> tuple[Tensor, ...]:
        """See :func:`tinyattn.split`: the method names the sizes ``split_size`` (torch's
        ``x.split(split_size=[4, 4], dim=-1)``), the function ``split_size_or_sections``."""
        return _ops().shape.views.split(self, split_size, dim)

    __slots__ = ()
    _data: np.ndarray  # (TensorBase's fields, declared for type checkers)
    _grad_fn: Any

    # -- in-place forms of composite ops ---------------------------------------------------
    def _write_result(self, compute, op: str) -> Tensor:
        """``self.copy_(compute(x))`` with ``x`` a clone of ``self`` when grad is recorded."""
        from ..autograd.grad_mode import is_grad_enabled

        ops = _ops()
        ops.inplace.check_inplace_allowed(self, op)
        source = ops.elementwise.unary.clone(self) if is_grad_enabled() else self
        return ops.creation.fill.copy_(self, compute(source))

    def addmm_(self, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
        """In-place :func:`tinyattn.addmm`: ``self = beta * self + alpha * mat1 @ mat2``."""
        addmm = _ops().linalg.matmul.addmm
        return self._write_result(lambda x: addmm(x, mat1, mat2, beta=beta, alpha=alpha), "addmm_")

    def baddbmm_(self, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
        """In-place :func:`tinyattn.baddbmm`."""
        baddbmm = _ops().linalg.matmul.baddbmm
        return self._write_result(
            lambda x: baddbmm(x, batch1, batch2, beta=beta, alpha=alpha), "baddbmm_"
        )

    def addbmm_(self, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
        """In-place :func:`tinyattn.addbmm`."""
        addbmm = _ops().linalg.matmul.addbmm
        return self._write_result(
            lambda x: addbmm(x, batch1, batch2, beta=beta, alpha=alpha), "addbmm_"
        )

    def cumsum_(self, dim: int, *, dtype=None) -> Tensor:
        """In-place :func:`tinyattn.cumsum` (the result is cast back to ``self.dtype``)."""
        cumsum = _ops().reduce.cumulative.cumsum
        return self._write_result(lambda x: cumsum(x, dim, dtype=dtype), "cumsum_")

    def cumprod_(self, dim: int, *, dtype=None) -> Tensor:
        """In-place :func:`tinyattn.cumprod`."""
        cumprod = _ops().reduce.cumulative.cumprod
        return self._write_result(lambda x: cumprod(x, dim, dtype=dtype), "cumprod_")

    def lerp_(self, end: Tensor, weight) -> Tensor:
        """In-place :func:`tinyattn.lerp`: ``self += weight * (end - self)``."""
        lerp = _ops().elementwise.unary.lerp
        return self._write_result(lambda x: lerp(x, end, weight), "lerp_")

    def fill_diagonal_(self, fill_value, wrap: builtins.bool = False) -> Tensor:
        """Write ``fill_value`` on the main diagonal, in place.

        2-D (n, m): elements ``(i, i)``; with ``wrap`` a tall matrix continues below
        (every ``m + 1``-th element of the row-major order, as torch). n-D: every dim the
        same length, elements ``(i, i, ..., i)``. Gradient: ``d self = g`` off the
        diagonal, 0 on it (``masked_fill_``).
        """
        shape = tuple(self.shape)
        if len(shape) < 2:
            raise RuntimeError(
                f"fill_diagonal_: dimensions must larger than 1, got shape {list(shape)}"
            )
        if len(shape) > 2 and len(set(shape)) != 1:
            raise RuntimeError(
                f"fill_diagonal_: all dimensions of input must be of equal length, got shape "
                f"{list(shape)}"
            )
        numel = math.prod(shape)
        if len(shape) == 2:
            rows, cols = shape
            step = cols + 1
            stop = numel if wrap and rows > cols + 1 else min(rows, cols) * cols
        else:
            step = sum(math.prod(shape[k + 1 :]) for k in range(len(shape)))
            stop = numel
        mask = np.zeros(numel, dtype=bool)
        mask[0:stop:step] = True
        return self.masked_fill_(_ops().creation.factories.tensor(mask.reshape(shape)), fill_value)

    # -- in-place view changes -------------------------------------------------------------
    def _become_view(self, view: Tensor, op: str) -> Tensor:
        """Make ``self`` the ``view`` of itself (new shape/strides, same memory).

        Autograd: ``self``'s node becomes the view's (whose input is ``self``'s old node);
        the version is not bumped since no value changed.
        """
        target: Any = self  # (a mixin: the fields are TensorBase's)
        target._data = view._data
        if view._grad_fn is not None:
            target._grad_fn = view._grad_fn
        return self

    def t_(self) -> Tensor:
        """In-place :meth:`t`: ``self`` becomes its own transpose (same memory)."""
        _ops().inplace.check_inplace_allowed(self, "t_")
        return self._become_view(_ops().shape.views.t(self), "t_")

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        """In-place :meth:`transpose`: swap two dims of ``self`` (same memory)."""
        _ops().inplace.check_inplace_allowed(self, "transpose_")
        return self._become_view(_ops().shape.views.transpose(self, dim0, dim1), "transpose_")

    def swapaxes_(self, axis0: int, axis1: int) -> Tensor:
        """``transpose_(axis0, axis1)``."""
        return self.transpose_(axis0, axis1)

    def swapdims_(self, dim0: int, dim1: int) -> Tensor:
        """``transpose_(dim0, dim1)``."""
        return self.transpose_(dim0, dim1)

    # -- sums and conversions --------------------------------------------------------------
    def sum_to_size(self, *sizes, size=None) -> Tensor:
        """Sum ``self`` down to ``size``, which must broadcast to ``self.shape``.

        The reverse of ``expand``: leading dims are summed away and dims where ``size``
        has 1 are summed with ``keepdim``. Gradient: ``d self = g`` broadcast back.
        """
        target = _sizes(_ops()._util.int_list(sizes, size, "sum_to_size", "size"), "sum_to_size")
        shape = tuple(self.shape)
        lead = len(shape) - len(target)
        if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
            raise RuntimeError(
                f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}."
            )
        out = self
        if lead:
            out = out.sum(tuple(range(lead)))
        squash = tuple(i for i, (t, s) in enumerate(zip(target, shape[lead:])) if t == 1 != s)
        if squash:
            out = out.sum(squash, keepdim=True)
        return out

    def char(self) -> Tensor:
        """``self.to(tinyattn.int8)``."""
        return self.to(_dt().int8)

    def short(self) -> Tensor:
        """``self.to(tinyattn.int16)``."""
        return self.to(_dt().int16)

    # -- construction and memory -----------------------------------------------------------
    def new(self, *args, device=None) -> Tensor:
        """Legacy constructor with ``self``'s dtype: ``new()`` empty, ``new(2, 3)`` or
        ``new(Size)`` uninitialised, ``new(data)`` values (cast), ``new(tensor)`` sharing
        the tensor's memory (its dtype must be ``self``'s)."""
        from ..core.device import check_device
        from ..core.size import Size

        check_device(device)
        ops = _ops()
        dtype = self.dtype
        if not args:
            return ops.creation.factories.empty(0, dtype=dtype)
        if len(args) == 1 and isinstance(args[0], type(self)):
            src = args[0]
            if src.dtype != dtype:
                raise TypeError(
                    f"new(): expected a tensor of dtype {dtype} (this tensor's), got {src.dtype}"
                )
            return type(self)._make(src._data)
        if len(args) == 1 and isinstance(args[0], Size):
            return ops.creation.factories.empty(tuple(args[0]), dtype=dtype)
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return ops.creation.factories.empty(tuple(int(a) for a in args), dtype=dtype)
        if len(args) == 1:
            return ops.creation.factories.tensor(
                np.asarray(args[0]).astype(dtype.np_dtype), dtype=dtype
            )
        raise TypeError(f"new(): expected sizes, a Size, data or a tensor, got {args!r}")

    def new_empty_strided(
        self, size, stride, *, dtype=None, device=None, requires_grad: builtins.bool = False
    ) -> Tensor:
        """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements)."""
        from ..core.device import check_device

        check_device(device)
        size, stride = _sizes((size,), "new_empty_strided"), _sizes((stride,), "new_empty_strided")
        if len(size) != len(stride):
            raise RuntimeError(
                f"new_empty_strided: mismatch in length of strides and shape: size "
                f"{list(size)}, stride {list(stride)}"
            )
        if any(n < 0 for n in size) or any(s < 0 for s in stride):
            raise RuntimeError(
                f"new_empty_strided: sizes and strides must be non-negative, got size "
                f"{list(size)}, stride {list(stride)}"
            )
        d = _dt().to_dtype(dtype) if dtype is not None else self.dtype
        np_dtype = np.dtype(d.np_dtype)
        span = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
        buffer = np.empty(max(span, 1), dtype=np_dtype)
        data = np.lib.stride_tricks.as_strided(
            buffer, size, tuple(s * np_dtype.itemsize for s in stride), writeable=True
        )
        out = type(self)._make(data)
        return out.requires_grad_(True) if requires_grad else out

    def _refuse_resize(self, op: str) -> None:
        if self._requires_grad:
            raise RuntimeError(f"{op}: cannot resize variables that require grad")

    def resize_(self, *sizes, size=None, memory_format=None) -> Tensor:
        """Give ``self`` the shape ``sizes`` in place (C order), keeping its first values.

        Fewer elements: the first ones stay (same memory). More: new memory starting
        with the old values, the rest uninitialised. Refused for tensors that require
        grad, as in torch.
        """
        from ..core.tensor_base import _empty_with_strides

        self._refuse_resize("resize_")
        shape = _sizes(_ops()._util.int_list(sizes, size, "resize_", "size"), "resize_")
        if any(n < 0 for n in shape):
            raise RuntimeError(f"resize_: negative dimension in {list(shape)}")
        n = math.prod(shape)
        flat = self._data.reshape(-1)
        if n <= flat.size:
            data = flat[:n].reshape(shape)
        else:
            data = np.empty(n, dtype=flat.dtype)
            data[: flat.size] = flat
            data = data.reshape(shape)
        self._data = data if data.size else _empty_with_strides(data)
        self._bump_version()
        return self

    def resize_as_(self, the_template: Tensor, *, memory_format=None) -> Tensor:
        """``resize_(the_template.shape)``."""
        self._refuse_resize("resize_as_")
        return self.resize_(tuple(the_template.shape))

    def set_(self, source: Tensor | None = None) -> Tensor:
        """Make ``self`` share ``source``'s memory, shape and strides (no ``source``: empty).

        The storage/offset/size/stride form is not supported (tinyattn has no storages).
        torch has no derivative for ``set_`` (its backward raises); tinyattn refuses the
        call when a graph would be recorded, rather than keep a graph of the old values.
        """
        from ..autograd.grad_mode import is_grad_enabled

        _ops().inplace.check_inplace_allowed(self, "set_")
        if is_grad_enabled() and (self._requires_grad or getattr(source, "_requires_grad", False)):
            raise RuntimeError(
                "set_: derivative for set_ is not implemented; call it on detached tensors "
                "(or under tinyattn.no_grad())"
            )
        if source is None:
            self._data = np.empty(0, dtype=self._data.dtype)
        elif not isinstance(source, type(self)):
            raise TypeError(
                f"set_(): expected a Tensor source (tinyattn has no storages), got "
                f"{type_name(source)}"
            )
        elif source._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"set_(): could not set a tensor of dtype {self.dtype} to a tensor of dtype "
                f"{source.dtype}"
            )
        else:
            self._data = source._data
        self._bump_version()
        return self

    def share_memory_(self) -> Tensor:
        """Returns ``self``: tinyattn tensors are not sent between processes (they do not
        pickle), so there is nothing to move; ``is_shared()`` reports the call."""
        self.__dict__["_shared"] = True
        return self

    def is_shared(self) -> builtins.bool:
        """Whether ``share_memory_()`` was called on this tensor."""
        return self.__dict__.get("_shared", False)

    def get_device(self) -> builtins.int:
        """-1: the index of the CPU (torch's answer for a CPU tensor)."""
        return -1

    def is_inference(self) -> builtins.bool:
        """False: tinyattn's ``inference_mode`` is ``no_grad`` and makes ordinary tensors."""
        return False

    # -- Python callables ------------------------------------------------------------------
    def _check_callable_target(self, op: str) -> None:
        if self._requires_grad:
            raise RuntimeError(
                f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() "
                "instead."
            )

    def apply_(self, callable) -> Tensor:
        """``self[i] = callable(self[i])`` for every element, in place (Python numbers)."""
        self._check_callable_target("apply_")
        data = self._data
        for index in np.ndindex(data.shape):
            data[index] = callable(data[index].item())
        self._bump_version()
        return self

    def map_(self, other: Tensor, callable) -> Tensor:
        """``self[i] = callable(self[i], other[i])`` (``other`` broadcast to ``self``)."""
        self._check_callable_target("map_")
        other = np.broadcast_to(_array(other, self, "map_"), self._data.shape)
        data = self._data
        for index in np.ndindex(data.shape):
            data[index] = callable(data[index].item(), other[index].item())
        self._bump_version()
        return self

    def map2_(self, x: Tensor, y: Tensor, callable) -> Tensor:
        """``self[i] = callable(self[i], x[i], y[i])`` (``x``, ``y`` broadcast to ``self``)."""
        self._check_callable_target("map2_")
        shape = self._data.shape
        a = np.broadcast_to(_array(x, self, "map2_"), shape)
        b = np.broadcast_to(_array(y, self, "map2_"), shape)
        data = self._data
        for index in np.ndindex(shape):
            data[index] = callable(data[index].item(), a[index].item(), b[index].item())
        self._bump_version()
        return self

    # -- real-dtype answers to complex-number and device queries ---------------------------
    @property
    def is_cpu(self) -> builtins.bool:
        """True: tinyattn tensors live on the CPU."""
        return True

    @property
    def real(self) -> Tensor:
        """The real part, a view (writes change ``self``); ``self`` for a real dtype."""
        return _ops().complex.real(self)

    @real.setter
    def real(self, value) -> None:
        _ops().complex.set_part(self, "real", value)

    @property
    def imag(self) -> Tensor:
        """The imaginary part, a view (writes change ``self``); raises for a real dtype."""
        return _ops().complex.imag(self)

    @imag.setter
    def imag(self, value) -> None:
        _ops().complex.set_part(self, "imag", value)

    @property
    def H(self) -> Tensor:
        """Conjugate transpose of a matrix (``self.t()`` for a real 2-D tensor)."""
        if self.ndim != 2:
            raise RuntimeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
            )
        return self.transpose(0, 1).conj()

    @property
    def mH(self) -> Tensor:
        """Conjugate transpose of the last two dims (``self.mT`` for a real tensor)."""
        if self.ndim < 2:
            raise RuntimeError(
                "tensor.mH is only supported on matrices or batches of matrices. Got "
                f"{self.ndim}-D tensor."
            )
        return self.transpose(-2, -1).conj()

    def adjoint(self) -> Tensor:
        """``self.mH``."""
        return self.mH

    # -- more aliases ----------------------------------------------------------------------
    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        """See :func:`tinyattn.hardshrink`."""
        import tinyattn  # (at call time: nn.functional sits above the Tensor class)

        return tinyattn.nn.functional.hardshrink(self, lambd)  # (not the out= wrapper)

    def prelu(self, weight: Tensor) -> Tensor:
        """See :func:`tinyattn.prelu`."""
        import tinyattn

        return tinyattn.prelu(self, weight)

    def absolute_(self) -> Tensor:
        """``abs_()``."""
        return self.abs_()

    def narrow_copy(self, dim: int, start: int, length: int) -> Tensor:
        """``narrow(dim, start, length).clone()``: the same values in new memory."""
        return _ops().shape.views.narrow(self, dim, start, length).clone()

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple:
        """``chunk`` (torch's unsafe form skips a view check tinyattn does not make)."""
        return _ops().shape.views.chunk(self, chunks, dim)

    def unsafe_split(self, split_size: int, dim: int = 0) -> tuple:
        """``split`` (torch's unsafe form skips a view check tinyattn does not make)."""
        return _ops().shape.views.split(self, split_size, dim)

    def is_set_to(self, tensor: Tensor) -> builtins.bool:
        """Whether ``tensor`` views exactly the same memory: address, shape, strides, dtype."""
        a, b = self._data, tensor._data
        return (
            a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape
            and a.strides == b.strides
            and a.dtype == b.dtype
        )

    # -- hooks -----------------------------------------------------------------------------
    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after backward has accumulated into this leaf's ``.grad``.

        Leaves only (as torch); ``autograd.grad`` does not run it (it accumulates nothing).
        Returns a handle whose ``remove()`` unregisters the hook.
        """
        from ..core.function import leaf_node

        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        hooks = leaf_node(self).__dict__.setdefault("post_accumulate_grad_hooks", [])
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)


class _RemovableHandle:
    def __init__(self, hooks: list, hook) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _dt():
    from ..core import _dtype

    return _dtype


def _array(t, target, op: str) -> np.ndarray:
    if isinstance(t, numbers.Number):
        return np.asarray(t)
    if t._data.dtype != target._data.dtype:
        raise TypeError(f"{op}: expected a tensor of dtype {target.dtype} (self's), got {t.dtype}")
    return t._data
