"""Write the Tensor methods that forward to ops: ``tinyattn/tensor_api/methods_*.py``.

Run ``python tools/gen_tensor_methods.py`` after adding an op to the table below
(or changing an op's signature); ``--check`` exits 1 if the files on disk differ
from what it would write (``tests/tensor_api/test_tensor_api.py`` runs that check).

Each method is written out with the op's own signature (minus its first
parameter, which the method fills with ``self``, and private ``_`` options), so
that ``help(Tensor)``, go-to-definition and type checkers see every method.
"""

from __future__ import annotations

import inspect
import operator
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The module of ``tinyattn.ops`` each family below names (a family not listed is its path).
OPS_PATHS = {
    "fill": "creation.fill",
    "from_buffers": "creation.from_buffers",
    "arithmetic": "elementwise.arithmetic",
    "binary": "elementwise.binary",
    "compare": "elementwise.compare",
    "integer_math": "elementwise.integer_math",
    "logic": "elementwise.logic",
    "trig": "elementwise.trig",
    "unary": "elementwise.unary",
    "unary_inplace": "elementwise.unary_inplace",
    "indexing": "index.indexing",
    "scatter": "index.scatter",
    "index_writes": "index.writes",
    "linalg_api": "linalg.api",
    "decompositions": "linalg.decompositions",
    "lu": "linalg.lu",
    "matrix_methods": "linalg.matrix_methods",
    "products": "linalg.products",
    "linalg_helpers": "linalg.helpers",
    "linalg_legacy": "linalg.legacy",
    "cumulative": "reduce.cumulative",
    "numeric": "reduce.numeric",
    "reduction": "reduce.reduction",
    "stats": "reduce.stats",
    "activation": "reduce.softmax",
    "shape_composites": "shape.composites",
    "rearrange": "shape.rearrange",
    "strided": "shape.strided",
    "views": "shape.views",
    "igamma": "special.igamma",
}


def ops_path(family: str) -> str:
    """The dotted path below ``tinyattn.ops`` of the module that holds ``family``'s ops."""
    return OPS_PATHS.get(family, family)


# The tensor API by op family: each name resolves to ``tinyattn.ops.<ops_path(family)>.<name>``.
FAMILIES = {
    "arithmetic": (
        "add sub mul div true_divide floor_divide remainder pow maximum minimum "
        "add_ sub_ mul_ div_ pow_ divide multiply subtract"
    ),
    "unary": (
        "neg abs erf exp log log2 log1p expm1 sqrt rsqrt sin cos tanh sigmoid relu reciprocal square "
        "sign floor ceil round clamp clip clone contiguous lerp "
        "neg_ abs_ exp_ log_ sqrt_ tanh_ sigmoid_ relu_ clamp_ clip_"
    ),
    "compare": (
        "eq ne lt le gt ge greater less equal logical_not logical_and logical_or logical_xor "
        "isnan isinf isfinite isclose allclose"
    ),
    "reduction": (
        "sum mean var std max min amax amin argmax argmin logsumexp norm prod any all count_nonzero"
    ),
    "linalg.matmul": "matmul mm bmm dot outer addmm baddbmm addbmm cross",
    "sorting": (
        "sort argsort msort topk kthvalue median nanmedian mode unique unique_consecutive bincount"
    ),
    "cumulative": "cumsum cumprod cummax cummin",
    "activation": "softmax log_softmax",
    "fill": "fill_ zero_ copy_",
    "random.fills": "uniform_ normal_ bernoulli_ exponential_ random_",
    "creation.factories": "new_zeros new_ones new_empty new_full new_tensor",
    "random.sampling": "bernoulli multinomial",
    "views": (
        "view view_as reshape reshape_as flatten unflatten squeeze unsqueeze squeeze_ unsqueeze_ "
        "transpose swapaxes permute t movedim expand expand_as narrow select chunk unbind"
    ),
    "rearrange": (
        "repeat repeat_interleave flip roll triu tril triu_ tril_ diagonal diff diag diag_embed"
    ),
    "indexing": (
        "gather scatter scatter_ scatter_add scatter_add_ index_select index_fill index_fill_ "
        "masked_fill masked_fill_ masked_select nonzero index_put_ index_add index_add_ "
        "masked_scatter_ argwhere"
    ),
    # -- elementwise: trigonometry, rounding, two-input math, comparisons --
    "trig": (
        "tan asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh "
        "arctanh deg2rad rad2deg sinc tan_ asin_ acos_ atan_ sinh_ cosh_ asinh_ acosh_ atanh_ "
        "arcsin_ arccos_ arctan_ arcsinh_ arccosh_ arctanh_ deg2rad_ rad2deg_ sinc_"
    ),
    "unary_inplace": (
        "log10 exp2 trunc fix frac sgn signbit logit nan_to_num positive clamp_min clamp_max "
        "nan_to_num_ clamp_min_ clamp_max_ trunc_ fix_ floor_ ceil_ round_ sign_ sgn_ frac_ "
        "logit_ sin_ cos_ log2_ log10_ log1p_ expm1_ exp2_ rsqrt_ reciprocal_ square_ erf_ "
        "negative_ negative absolute"
    ),
    "binary": (
        "atan2 arctan2 hypot logaddexp logaddexp2 xlogy fmod copysign fmax fmin heaviside "
        "float_power addcmul addcdiv atan2_ arctan2_ hypot_ xlogy_ fmod_ copysign_ "
        "float_power_ addcmul_ addcdiv_ remainder_ floor_divide_ true_divide_ divide_ "
        "multiply_ subtract_"
    ),
    "logic": (
        "not_equal greater_equal less_equal bitwise_and bitwise_or bitwise_xor bitwise_not "
        "bitwise_left_shift bitwise_right_shift eq_ ne_ lt_ le_ gt_ ge_ not_equal_ "
        "greater_equal_ less_equal_ greater_ less_ logical_and_ logical_or_ logical_xor_ "
        "logical_not_ bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_left_shift_ "
        "bitwise_right_shift_"
    ),
    "shape_composites": (
        "broadcast_to moveaxis swapdims ravel tile tensor_split hsplit vsplit dsplit "
        "split_with_sizes flipud fliplr rot90 unfold take take_along_dim"
    ),
    "scatter": (
        "select_scatter slice_scatter diagonal_scatter index_copy index_copy_ index_put "
        "scatter_reduce scatter_reduce_ masked_scatter"
    ),
    "products": "trace diagflat kron mv ger vdot matrix_power dist cov corrcoef inner",
    "stats": "nansum nanmean aminmax quantile nanquantile histc logcumsumexp",
    # -- matrix functions --
    "matrix_methods": "det logdet slogdet inverse cholesky qr svd pinverse matrix_exp",
    # -- special functions --
    "special.functions": "erfc erfinv lgamma digamma mvlgamma i0 erfc_ erfinv_ lgamma_ digamma_ mvlgamma_ i0_",
    # -- integer/bit-level elementwise, matrix-vector updates --
    "integer_math": (
        "gcd gcd_ lcm lcm_ ldexp ldexp_ frexp nextafter nextafter_ isposinf isneginf isreal "
        "angle conj conj_physical resolve_conj resolve_neg is_conj is_neg heaviside_"
    ),
    "linalg_helpers": "addmv addmv_ addr addr_ renorm renorm_",
    "index_writes": "put put_ index_reduce index_reduce_",
    "numeric": "histogram",
    "strided": "as_strided",
}

# Methods whose argument order differs from the function's (written out by hand here).
SPECIAL = {
    "arithmetic": [
        '''    def where(self, condition, other) -> CoreTensor:
        """``tinyattn.where(condition, self, other)``. See :func:`tinyattn.where`."""
        return tinyattn.ops.elementwise.arithmetic.where(condition, cast("Tensor", self), other)
'''
    ],
}

SPECIAL["logic"] = [  # operators torch has and the Tensor class lacked (elementwise)
    f'''    def __{dunder}__(self, other) -> CoreTensor:
        """``{expr}``. See :func:`tinyattn.{op}`."""
        return tinyattn.ops.{ops_path(module)}.{op}({args})
'''
    for dunder, expr, module, op, args in (
        ("lshift", "self << other", "compare", "bitwise_left_shift", 'cast("Tensor", self), other'),
        (
            "rshift",
            "self >> other",
            "compare",
            "bitwise_right_shift",
            'cast("Tensor", self), other',
        ),
        (
            "rlshift",
            "other << self",
            "compare",
            "bitwise_left_shift",
            'other, cast("Tensor", self)',
        ),
        (
            "rrshift",
            "other >> self",
            "compare",
            "bitwise_right_shift",
            'other, cast("Tensor", self)',
        ),
        ("rmod", "other % self", "arithmetic", "remainder", 'other, cast("Tensor", self)'),
        (
            "ilshift",
            "self <<= other",
            "logic",
            "bitwise_left_shift_",
            'cast("Tensor", self), other',
        ),
        (
            "irshift",
            "self >>= other",
            "logic",
            "bitwise_right_shift_",
            'cast("Tensor", self), other',
        ),
        ("iand", "self &= other", "logic", "bitwise_and_", 'cast("Tensor", self), other'),
        ("ior", "self |= other", "logic", "bitwise_or_", 'cast("Tensor", self), other'),
        ("ixor", "self ^= other", "logic", "bitwise_xor_", 'cast("Tensor", self), other'),
        ("imod", "self %= other", "arithmetic", "remainder_", 'cast("Tensor", self), other'),
        ("ipow", "self **= other", "arithmetic", "pow_", 'cast("Tensor", self), other'),
        (
            "ifloordiv",
            "self //= other",
            "arithmetic",
            "floor_divide_",
            'cast("Tensor", self), other',
        ),
    )
]

SPECIAL["special.functions"] = [  # polygamma(n, input): the tensor is the second argument
    f'''    def {name}(self, n: int) -> CoreTensor:
        """{doc}"""
        return tinyattn.ops.special.functions.{target}
'''
    for name, doc, target in (
        ("polygamma", "See :func:`tinyattn.polygamma`.", 'polygamma(n, cast("Tensor", self))'),
        ("polygamma_", "In-place ``polygamma(n, self)``.", 'polygamma_(cast("Tensor", self), n)'),
    )
]

# One module (and mixin class) per concept, to keep each file readable.
MODULES = {
    "tinyattn/tensor_api/methods_math.py": (
        "TensorMathMethods",
        "elementwise math, comparisons, reductions, products",
        (
            "arithmetic",
            "unary",
            "compare",
            "reduction",
            "linalg.matmul",
            "activation",
            "products",
            "linalg_helpers",
        ),
    ),
    "tinyattn/tensor_api/methods_shape.py": (
        "TensorShapeMethods",
        "fills, views, rearrangements, indexing",
        (
            "fill",
            "random.fills",
            "creation.factories",
            "random.sampling",
            "views",
            "rearrange",
            "indexing",
            "shape_composites",
            "scatter",
            "index_writes",
            "strided",
        ),
    ),
    "tinyattn/tensor_api/methods_elementwise.py": (
        "TensorElementwiseMethods",
        "more one-input elementwise math: trigonometry, special values, in-place forms",
        ("trig", "unary_inplace"),
    ),
    "tinyattn/tensor_api/methods_binary.py": (
        "TensorBinaryMethods",
        "more two-input elementwise ops, in-place comparisons, bitwise ops and operators",
        ("binary", "logic", "integer_math"),
    ),
    "tinyattn/tensor_api/methods_select.py": (
        "TensorSelectMethods",
        "sorting, selection, scans; matrix functions (det, inverse ...); special functions",
        ("sorting", "cumulative", "stats", "matrix_methods", "special.functions", "numeric"),
    ),
}

HEADER = '''"""Tensor methods that forward to ops: {what}.

Generated by ``tools/gen_tensor_methods.py`` from the ops' signatures: edit the
table there and re-run it rather than editing this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import tinyattn  # the ops are looked up at call time: they import the Tensor class

if TYPE_CHECKING:
    from ..core.tensor import Tensor as CoreTensor
    from .tensor import Tensor

# ``cast("Tensor", self)``: a mixin's ``self`` is always a Tensor, which the type checker
# cannot know (the ops take Tensors); at run time cast returns its argument. The ops make
# their results with ``TensorBase._make`` (a ``tinyattn.Tensor`` at run time), typed as the
# core's ``Tensor``, which ``tinyattn.Tensor`` extends: ``-> CoreTensor``.


class {cls}:
    """Mixin of :class:`tinyattn.Tensor`."""

    __slots__ = ()
'''

LINE = 100


def _param(p: inspect.Parameter) -> str:
    text = p.name
    if p.kind is p.VAR_POSITIONAL:
        text = "*" + text
    if p.annotation is not p.empty:
        text += f": {p.annotation}"
    if p.default is not p.empty:
        default = repr(p.default)
        if isinstance(p.default, str) and '"' not in p.default:
            default = f'"{p.default}"'  # the quotes ruff format would write
        text += f" = {default}" if p.annotation is not p.empty else f"={default}"
    return text


def _wrapped(head: str, items: list[str], tail: str, indent: str) -> str:
    """``head(items)tail`` on one line, or wrapped the way ``ruff format`` wraps it."""
    one = f"{indent}{head}({', '.join(items)}){tail}"
    if len(one) <= LINE:
        return one
    inner = indent + "    "
    joined = f"{inner}{', '.join(items)}"
    if len(joined) <= LINE:
        return f"{indent}{head}(\n{joined}\n{indent}){tail}"
    lines = "".join(f"{inner}{item},\n" for item in items)
    return f"{indent}{head}(\n{lines}{indent}){tail}"


def _result(annotation: str) -> str:
    """An op's return annotation as the mixin writes it: ``Tensor`` is the core's."""
    return re.sub(r"\bTensor\b", "CoreTensor", str(annotation))


def _method(family: str, name: str) -> str:
    import tinyattn

    op = getattr(operator.attrgetter(ops_path(family))(tinyattn.ops), name)
    params = [
        p for p in list(inspect.signature(op).parameters.values())[1:] if not p.name.startswith("_")
    ]
    items, args, star_done = ["self"], ['cast("Tensor", self)'], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star_done:
            items.append("*")
            star_done = True
        star_done = star_done or p.kind is p.VAR_POSITIONAL
        items.append(_param(p))
        if p.kind is p.VAR_POSITIONAL:
            args.append("*" + p.name)
        elif p.kind is p.KEYWORD_ONLY:
            args.append(f"{p.name}={p.name}")
        else:
            args.append(p.name)
    ret = inspect.signature(op).return_annotation
    tail = ":" if ret is inspect.Signature.empty else f" -> {_result(ret)}:"
    public_fn = getattr(
        tinyattn, name, None
    )  # (the out= wrapper of it, see tinyattn/torch_surface/out.py)
    public = getattr(public_fn, "__wrapped_for_out__", public_fn) is op
    target = f"tinyattn.{name}" if public else f"tinyattn.ops.{ops_path(family)}.{name}"
    return (
        _wrapped(f"def {name}", items, tail, "    ")
        + f'\n        """See :func:`{target}`."""\n'
        + _wrapped(f"return tinyattn.ops.{ops_path(family)}.{name}", args, "", "        ")
        + "\n"
    )


def render() -> dict[str, str]:
    """The text of each generated module, by path relative to the repository root."""
    out = {}
    for path, (cls, what, families) in MODULES.items():
        parts = [HEADER.format(what=what, cls=cls)]
        for family in families:
            parts.append(f"    # -- {family} " + "-" * (LINE - 13 - len(family)) + "\n")
            methods = [_method(family, name) for name in FAMILIES[family].split()]
            parts.append("\n".join(methods + SPECIAL.get(family, [])))
        out[path] = "\n".join(parts)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in render().items():
        file = ROOT / path
        if file.exists() and file.read_text() == text:
            continue
        stale.append(path)
        if not check:
            file.write_text(text)
    if check and stale:
        print(f"out of date (run python tools/gen_tensor_methods.py): {', '.join(stale)}")
        return 1
    print(("stale: " if check else "written: ") + (", ".join(stale) or "nothing"))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
