"""dtypes with torch's names, and torch's type-promotion rules on top of NumPy.

torch and NumPy disagree on promotion in ways a learner would notice:
``int64_tensor / 2`` is float32 in torch (the default float dtype) but float64 in
NumPy, and a float32 tensor times a float64 *zero-dim* tensor stays float32 in
torch. ``result_type`` below follows torch: operands are ranked
dimensioned tensor > zero-dim tensor > Python scalar, and a lower-ranked operand
changes the result only when it is of a higher category (bool < int < float <
complex). A complex operand of lower rank keeps the precision of a floating operand
of higher rank (float32 tensor * complex128 zero-dim tensor -> complex64); a Python
complex number gives the default complex dtype (complex64 with float32 the default).
"""

from __future__ import annotations

import numpy as np

from .foundations.type_names import type_name


class dtype:
    """A tensor element type (``tinyattn.float32`` ...), wrapping a NumPy dtype."""

    __slots__ = ("name", "np_dtype", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str, np_dtype: type) -> None:
        self.name = name
        self.np_dtype = np.dtype(np_dtype)
        self.is_floating_point = self.np_dtype.kind == "f"
        self.is_complex = self.np_dtype.kind == "c"
        self.is_signed = self.np_dtype.kind in "fic"
        self.itemsize = self.np_dtype.itemsize

    def to_real(self) -> dtype:
        """The real dtype of the same precision (complex64 -> float32); real dtypes: self."""
        return _BY_NP[_REAL_OF[self.np_dtype]] if self.is_complex else self

    def to_complex(self) -> dtype:
        """The complex dtype of the same precision (float32 -> complex64), as torch."""
        if self.is_complex:
            return self
        if self.np_dtype not in _COMPLEX_OF:
            raise TypeError(
                f"to_complex(): expected a float32 or float64 dtype, got {self} (tinyattn has "
                "complex64 and complex128 only)"
            )
        return _BY_NP[_COMPLEX_OF[self.np_dtype]]

    def __repr__(self) -> str:
        return f"tinyattn.{self.name}"

    def __reduce__(self):  # dtypes are singletons, also across copy/pickle
        return (_dtype_by_name, (self.name,))


float16 = dtype("float16", np.float16)
float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
int8 = dtype("int8", np.int8)
int16 = dtype("int16", np.int16)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
uint8 = dtype("uint8", np.uint8)
bool_ = dtype("bool", np.bool_)
complex64 = dtype("complex64", np.complex64)
complex128 = dtype("complex128", np.complex128)


class _UnsupportedDtype(dtype):
    """A torch dtype tinyattn names but cannot store: every use as a tensor type raises.

    ``x.dtype == tinyattn.bfloat16`` and ``autocast(dtype=tinyattn.bfloat16)`` work;
    ``zeros(2, dtype=tinyattn.bfloat16)`` and ``x.to(tinyattn.bfloat16)`` raise TypeError.
    """

    __slots__ = ("reason",)

    def __init__(self, name: str, itemsize: int, reason: str) -> None:
        # np_dtype is the property below, so the base __init__ (which sets it) is skipped
        self.name = name
        self.is_floating_point = True
        self.is_complex = False
        self.is_signed = True
        self.itemsize = itemsize
        self.reason = reason

    @property
    def np_dtype(self):
        raise TypeError(self.reason)


bfloat16 = _UnsupportedDtype(
    "bfloat16",
    2,
    "tinyattn.bfloat16 cannot be used as a tensor dtype: NumPy has no bfloat16 type, so "
    "tinyattn cannot store bfloat16 tensors; use tinyattn.float32 (or float16)",
)

half, float_, double = float16, float32, float64
short, int_, long = int16, int32, int64
cfloat, cdouble = complex64, complex128

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, complex64, complex128)
_COMPLEX_OF = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}
_BY_NP = {d.np_dtype: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}

_default_float = float32


def _dtype_by_name(name: str) -> dtype:
    return bfloat16 if name == "bfloat16" else _BY_NAME[name]


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (float32 or float64), as ``torch.set_default_dtype``."""
    global _default_float
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default_float = d


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The tinyattn dtype of a NumPy dtype; TypeError for types tinyattn does not support."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        supported = ", ".join(d.name for d in _ALL)
        raise TypeError(f"unsupported dtype {np_dtype!r}; tinyattn supports {supported}") from None


# The dtype sums, squares and running products of a dtype are carried in (torch's
# "opmath" type): float16 values whose squares or partial sums leave float16's range
# (65504) are accumulated in float32 and rounded once, at the end.
_ACCUMULATION = {np.dtype(np.float16): np.dtype(np.float32)}


def accumulation_dtype(np_dtype: np.dtype) -> np.dtype:
    """The NumPy dtype values of ``np_dtype`` are accumulated in: float32 for float16
    (as torch), the dtype itself otherwise."""
    return _ACCUMULATION.get(np_dtype, np_dtype)


def to_dtype(d) -> dtype:
    """Accept a tinyattn dtype, a NumPy dtype/type, or the Python types float/int/bool."""
    if d is bfloat16 or (isinstance(d, str) and d == "bfloat16"):
        raise TypeError(bfloat16.reason)
    if isinstance(d, dtype):
        return d
    if d is float:  # Python's float is a double: torch gives float64 whatever the default
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    return from_numpy_dtype(d)


_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _category(np_dtype: np.dtype) -> int:
    return _CATEGORY[np_dtype.kind]


def _complex_of(np_dtype: np.dtype) -> np.dtype:
    """The complex dtype keeping a floating dtype's precision; float16 has none here."""
    if np_dtype not in _COMPLEX_OF:
        raise TypeError(
            f"type promotion of {from_numpy_dtype(np_dtype)} with a complex operand gives "
            "torch's complex32, which tinyattn cannot store (NumPy has no complex32); "
            "convert to float32 first"
        )
    return _COMPLEX_OF[np_dtype]


def _promote_same_rank(dtypes) -> np.dtype | None:
    """Promotion among operands of the same rank: higher category wins, then NumPy's rule
    (which for float + complex keeps the wider precision: float64 + complex64 -> complex128,
    as torch; float16 + complex64 -> complex64)."""
    result = None
    for d in dtypes:
        if result is None:
            result = d
        elif _category(d) == _category(result) or min(_category(d), _category(result)) == 2:
            result = np.promote_types(result, d)  # (float with complex: the wider precision)
        elif _category(d) > _category(result):
            result = d
    return result


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """A higher-ranked result and a lower-ranked one, as torch combines its categories:
    the lower one wins only with a higher category, and a complex lower one keeps the
    precision of a floating higher one."""
    if higher is None:
        return lower
    if lower is None or _category(lower) <= _category(higher):
        return higher
    if lower.kind == "c" and higher.kind == "f":
        return _complex_of(higher)
    return lower


_SCALAR_DEFAULT = {0: np.dtype(np.bool_), 1: np.dtype(np.int64)}


def default_complex_np_dtype() -> np.dtype:
    """The dtype of complex tensors made from Python complex numbers: complex64 while the
    default float dtype is float32, complex128 while it is float64 (as torch)."""
    return _COMPLEX_OF.get(_default_float.np_dtype, np.dtype(np.complex64))


def result_type(*operands) -> np.dtype:
    """torch's result dtype for arrays (dimensioned or zero-dim) and Python scalars."""
    dimensioned, zero_dim, scalar_cat = [], [], -1
    for x in operands:
        if isinstance(x, np.ndarray):
            (dimensioned if x.ndim else zero_dim).append(x.dtype)
        elif isinstance(x, bool):
            scalar_cat = max(scalar_cat, 0)
        elif isinstance(x, (int, np.integer)):
            scalar_cat = max(scalar_cat, 1)
        elif isinstance(x, (float, np.floating, np.bool_)):  # torch reads np.bool_ as a float
            scalar_cat = max(scalar_cat, 2)
        elif isinstance(x, (complex, np.complexfloating)):
            scalar_cat = 3
        else:
            raise TypeError(f"unsupported operand type {type_name(x)}")
    result = _combine(_promote_same_rank(dimensioned), _promote_same_rank(zero_dim))
    if result is None or scalar_cat > _category(result):
        if scalar_cat == 3:
            return _combine(result, default_complex_np_dtype())
        if scalar_cat == 2:
            return _default_float.np_dtype
        return _SCALAR_DEFAULT[max(scalar_cat, 0)]
    return result


def float_result_type(*operands) -> np.dtype:
    """``result_type`` lifted to a floating (or complex) dtype (true division, exp, mean ...)."""
    rt = result_type(*operands)
    return rt if rt.kind in "fc" else _default_float.np_dtype
