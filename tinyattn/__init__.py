"""tinyattn: a from-scratch autograd framework on NumPy with numba attention kernels.

The API follows PyTorch, so tutorial code runs after ``import tinyattn as torch``::

    >>> import tinyattn as torch
    >>> x = torch.randn(2, 3, requires_grad=True)
    >>> torch.softmax(x, dim=-1).sum().backward()

Importing compiles nothing: numba kernels are compiled on first use (and cached).
"""

import os as _os

# NumPy's OpenBLAS keeps its worker threads spinning ~0.1 s (2**28 cycles) after each
# product; the numba attention kernels then share 2 cores with them and ran ~1.7x slower
# right after a projection GEMM (28 ms -> 48 ms measured). 2**20 cycles (~0.4 ms) still
# keeps back-to-back small GEMMs warm (2**10 cost them ~10%) and frees the cores before a
# kernel. OpenBLAS reads it once, when NumPy loads: it applies when tinyattn is imported
# before numpy (otherwise set it in the environment yourself).
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")
# numba's default threading layer (omp) runs on GNU OpenMP, whose idle workers spin for
# GOMP_SPINCOUNT = 300,000 polls after every parallel region before they sleep. A NumPy
# 512^3 matmul right after an attention kernel ran 1.16-1.25x slower than after a 10 ms
# pause; with 10,000 polls (tens of microseconds) 0.94-1.07x (4 runs each, loaded 2-core
# machine, /tmp probe; see tinyattn/kernels/_threads.py and the benchmark's interference
# suite). Read once, when a libgomp loads. Imported before torch, torch's own copy is
# loaded (and reads it) too; when a kernel runs before torch is imported, torch reuses
# numba's libgomp (same soname), so the two share one OpenMP pool.
_os.environ.setdefault("GOMP_SPINCOUNT", "10000")

# glibc: freed arrays stay in the heap for the next step instead of coming back as fresh
# pages (a page fault each); see foundations/malloc.py. TINYATTN_MALLOC=default turns it off.
from .foundations import malloc as _malloc

_malloc.tune()

# torch's paths of the CPU shims (``tinyattn.cuda``, ``tinyattn.backends.cudnn`` ...) and of
# save/load (``tinyattn.serialization``, ``tinyattn.safetensors``) import the modules in
# tinyattn/shims/ and tinyattn/io/ (the same module objects); see tinyattn/shims/__init__.py.
from . import shims as _shims

_shims.install()

import math as _math

# The names below are an index of the public API, grouped by concept: one import per module,
# one binding per name (tests/test_layout_rules.py checks it).
# fmt: off
# -- dtypes, version, grad modes, softmax -------------------------------------------------
from .core import _dtype
from .core._dtype import (
    bfloat16, cdouble, cfloat, complex128, complex64, double, dtype, float16, float32, float64,
    get_default_dtype, half, int16, int32, int64, int8, long, set_default_dtype, short, uint8,
    bool_ as bool, float_ as float, int_ as int
)
from ._version import __version__
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .ops.reduce.softmax import log_softmax, softmax

# -- the tensor, device, size, random state; legacy constructors -----------------------
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .core.device import device
from .core.size import Size
from .tensor_api.tensor import Tensor
from . import autograd
from .torch_surface.legacy_types import *  # noqa: F403 (FloatTensor, LongTensor ...)
from .torch_surface.legacy_names import Variable as _Variable

# torch.autograd.Variable, for pre-0.4 tutorials (torch_surface/legacy_names.py)
autograd.Variable = _Variable

inf = _math.inf
nan = _math.nan
pi = _math.pi
e = _math.e


def is_tensor(obj) -> bool:
    """True if ``obj`` is a tinyattn Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


# -- creation: factories, samplers, signal windows -------------------------------------
from .ops.creation.factories import (
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, ones,
    ones_like, tensor, zeros, zeros_like
)
from .ops.creation.from_buffers import asarray, empty_strided, frombuffer, scalar_tensor
from .ops.random.sampling import (
    bernoulli, binomial, multinomial, normal, poisson, rand, rand_like, randint, randint_like,
    randn, randn_like, randperm
)
from .ops.windows import (
    bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window, logspace, vander
)

# -- elementwise: arithmetic, unary, comparisons, trigonometry, integer and special functions ---
from .ops.elementwise.arithmetic import (
    add, div, divide, floor_divide, maximum, minimum, mul, multiply, pow, remainder, sub, subtract,
    true_divide, where
)
from .ops.elementwise.unary import (
    abs, absolute, ceil, clamp, clip, clone, cos, erf, exp, expm1, floor, lerp, log, log1p, log2,
    neg, negative, reciprocal, relu, round, rsqrt, sigmoid, sign, sin, sqrt, square, tanh
)
from .ops.elementwise.compare import (
    allclose, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
    bitwise_xor, eq, equal, ge, greater, greater_equal, gt, isclose, isfinite, isinf, isnan, le,
    less, less_equal, logical_and, logical_not, logical_or, logical_xor, lt, ne, not_equal
)
from .ops.elementwise.trig import (
    acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctanh, asin, asinh, atan, atanh, cosh,
    deg2rad, rad2deg, sinc, sinh, tan
)
from .ops.elementwise.binary import (
    addcdiv, addcmul, arctan2, atan2, copysign, float_power, fmax, fmin, fmod, heaviside, hypot,
    logaddexp, logaddexp2, xlogy
)
from .ops.elementwise.unary_inplace import (
    clamp_max, clamp_min, exp2, fix, frac, log10, logit, nan_to_num, positive, sgn, signbit, trunc
)
from .ops.elementwise.integer_math import (
    angle, conj, conj_physical, frexp, gcd, gcd_, is_conj, is_neg, isneginf, isposinf, isreal, lcm,
    lcm_, ldexp, ldexp_, nextafter, resolve_conj, resolve_neg, rsub
)
from .ops.special.functions import digamma, erfc, erfinv, i0, lgamma, mvlgamma, polygamma
from .ops.special.igamma import igamma, igammac

# -- reductions, scans, statistics, numerical integration ------------------------------
from .ops.reduce.reduction import (
    all, amax, amin, any, argmax, argmin, count_nonzero, cumsum, logsumexp, max, mean, min, prod,
    std, std_mean, sum, var, var_mean
)
from .ops.reduce.cumulative import cummax, cummin, cumprod
from .ops.reduce.stats import (
    aminmax, cumulative_trapezoid, histc, isin, logcumsumexp, nanmean, nanquantile, nansum,
    quantile, trapezoid, unravel_index
)
from .ops.reduce.numeric import gradient, histogram, histogramdd, trapz

# -- shape: views, rearrangements, joins and splits, strides ---------------------------
from .ops.shape.rearrange import (
    cat, concat, concatenate, diag, diag_embed, diagonal, diff, flip, meshgrid, repeat_interleave,
    roll, stack, tril, tril_indices, triu, triu_indices
)
from .ops.shape.views import (
    chunk, flatten, movedim, narrow, permute, reshape, select, split, squeeze, swapaxes, t,
    transpose, unbind, unflatten, unsqueeze
)
from .ops.shape.composites import (
    atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors, broadcast_to,
    column_stack, dsplit, dstack, fliplr, flipud, hsplit, hstack, moveaxis, ravel, rot90,
    row_stack, split_with_sizes, swapdims, take, take_along_dim, tensor_split, tile, vsplit, vstack
)
from .ops.shape.strided import as_strided

# -- indexing: gather, scatter, masked and index writes --------------------------------
from .ops.index.indexing import (
    argwhere, gather, index_add, index_fill, index_select, masked_fill, masked_select, nonzero,
    scatter, scatter_add
)
from .ops.index.scatter import (
    diagonal_scatter, index_copy, index_put, masked_scatter, scatter_reduce, select_scatter,
    slice_scatter
)
from .ops.index.writes import index_reduce, put

# -- linear algebra: products, matrix functions, decompositions ------------------------
from .ops.linalg.matmul import (
    addbmm, addmm, baddbmm, bmm, cross, dot, einsum, inner, matmul, mm, outer
)
from .ops.linalg.products import (
    block_diag, cartesian_prod, cdist, chain_matmul, combinations, corrcoef, cov, diagflat, dist,
    ger, kron, matrix_power, mv, tensordot, trace, vdot
)
from .ops.linalg.matrix_methods import (
    cholesky, det, inverse, logdet, matrix_exp, pinverse, qr, slogdet, svd
)
from .ops.linalg.helpers import addmv, addmv_, addr, renorm
from .ops.linalg.legacy import *  # noqa: F403
from .ops.linalg.lu import lu, lu_solve, lu_unpack

# -- sorting and selection -------------------------------------------------------------
from .ops.sorting import (
    argsort, bincount, bucketize, kthvalue, median, mode, msort, nanmedian, searchsorted, sort,
    topk, unique, unique_consecutive
)

# -- queries, dtype promotion, printing ------------------------------------------------
from .torch_surface.queries import (
    can_cast, detach, finfo, get_default_device, get_num_threads, iinfo, is_nonzero, is_same_size,
    is_signed, promote_types, result_type, set_default_device, set_num_threads
)
from .tensor_api.printing import set_printoptions

# -- torch.fft; einops finds tinyattn tensors once einops is imported (costs nothing now) ----
from . import fft
from .shims import einops as _einops

_einops.install()

# -- torch's top-level in-place forms, *_copy, aliases, dlpack -----------------------------
# (each module lists its names in ``__all__``; see tinyattn/torch_surface/; the top-level
# forms of the functional ops, ``tinyattn.dropout``, ``native_layer_norm`` ..., live with
# nn.functional and load lazily: see ``_LAZY_ALL_OF`` below)
from .torch_surface.inplace import *  # noqa: F403
from .torch_surface.aliases import *  # noqa: F403
from .torch_surface.copies import *  # noqa: F403
from .torch_surface.dlpack import from_dlpack, to_dlpack

# -- global switches and small queries (torch_surface/switches.py) ---------------------
from .torch_surface.switches import (
    are_deterministic_algorithms_enabled,
    compiled_with_cxx11_abi,
    get_deterministic_debug_mode,
    get_num_interop_threads,
    inference_mode,  # grad_mode's, plus the state is_inference_mode_enabled reads
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    is_inference_mode_enabled,
    is_storage,
    is_warn_always_enabled,
    set_anomaly_enabled,
    set_default_tensor_type,
    set_deterministic_debug_mode,
    set_flush_denormal,
    set_num_interop_threads,
    set_warn_always,
    typename,
    use_deterministic_algorithms,
)

autograd.inference_mode = inference_mode

# -- torch's out= keyword on the listed functions (torch_surface/out.py, out_table.py) ---
from .ops.complex import complex, imag, is_complex, polar, real, view_as_complex, view_as_real
from .torch_surface import factory_options as _factory_options
from .torch_surface.argument_names import norm  # torch.norm's positional out=
from .torch_surface.layouts import *  # noqa: F403 (strided, contiguous_format ...)
from .torch_surface.out import install as _install_out
from .torch_surface.out import with_out as _with_out
from .torch_surface.out_table import OUT_TORCH as _OUT_TORCH

_factory_options.install(globals(), Tensor)  # layout=, pin_memory= ... (before out=)
_install_out(globals(), tuple(n for n in _OUT_TORCH if n in globals()))  # lazy ones: on use

# fmt: on

# -- lazy imports: subpackages and names loaded on first access (PEP 562) ------------------
# ``import tinyattn`` loads the tensor, autograd and ops only; ``tinyattn.nn``,
# ``tinyattn.optim``, ``tinyattn.save`` ... import their module the first time they are
# used (then they are ordinary attributes); numba is never imported here (kernels import it
# on first use). benchmarks/cold_start.py measures ``import tinyattn``.
_LAZY_SUBMODULES = frozenset(
    {
        "accelerator",
        "amp",
        "backends",
        "cuda",
        "distributed",
        "distributions",
        "explain",  # a callable module: tinyattn.explain(loss, path), with tinyattn.explain(path)
        "func",
        "linalg",
        "multiprocessing",  # the stdlib module: ``import tinyattn`` does not import it
        "nested",
        "nn",
        "onnx",
        "optim",
        "profiler",
        "safetensors",  # tinyattn/io/safetensors.py under this name (shims/__init__.py: PUBLIC_PATHS)
        "serialization",  # tinyattn/io/serialization.py, likewise
        "sparse",
        "special",
        "utils",
        "version",  # tinyattn/shims/version.py (shims/__init__.py: PUBLIC_PATHS)
        "viz",
    }
)
_LAZY_NAMES = {  # name -> the module that defines it
    "load": "serialization",
    "save": "serialization",
    "compile": "shims.compile",
    "vmap": "func",
    "range": "torch_surface.legacy_names",  # torch.range, deprecated; lazy: builtin range stays
    "autocast": "amp",
    "GradScaler": "amp",
    "get_autocast_dtype": "amp",
    "is_autocast_enabled": "amp",
    "get_float32_matmul_precision": "backends",
    "set_float32_matmul_precision": "backends",
    "sparse_coo_tensor": "sparse",
    "spmm": "sparse",
}

# Modules whose ``__all__`` names are package attributes, loaded on first use of one of them:
# torch's top-level forms of the functional ops (``tinyattn.dropout``, ``tinyattn.conv2d``,
# ``native_layer_norm`` ...) call nn.functional, which ``import tinyattn`` does not load.
_LAZY_ALL_OF = ("nn.functional.aten_forms", "nn.functional.native")

# torch's deprecated build flags (``torch.has_mps`` ...): False here, with torch's warning.
_DEPRECATED_FLAGS = {
    "has_mps": "torch.backends.mps.is_built()",
    "has_cuda": "torch.backends.cuda.is_built()",
    "has_cudnn": "torch.backends.cudnn.is_available()",
}


def __getattr__(name: str):
    import importlib

    if name in _DEPRECATED_FLAGS:
        import warnings

        warnings.warn(
            f"'{name}' is deprecated, please use '{_DEPRECATED_FLAGS[name]}'",
            UserWarning,
            stacklevel=2,
        )
        return False

    if name == "__all__":  # ``from tinyattn import *``: the lazy names too, as torch's
        return _star_names()
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        for path in _LAZY_ALL_OF:
            module = importlib.import_module(f"{__name__}.{path}")
            if name in module.__all__:
                value = getattr(module, name)
                if name in _OUT_TORCH:
                    value = _with_out(value, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _star_names() -> list[str]:
    """What ``from tinyattn import *`` binds: the public names already loaded, and the lazy
    functions (``tinyattn.save``, ``tinyattn.conv2d`` ...), which this loads; not the lazy
    subpackages (torch's ``from torch import *`` does not bind ``nn`` either)."""
    import importlib

    lazy_all = [n for p in _LAZY_ALL_OF for n in importlib.import_module(f"{__name__}.{p}").__all__]
    loaded = [n for n in globals() if not n.startswith("_") and n not in _LAZY_SUBMODULES]
    return sorted(set(loaded) | set(_LAZY_NAMES) | set(lazy_all))


def __dir__() -> list[str]:
    import importlib

    lazy_all = {n for p in _LAZY_ALL_OF for n in importlib.import_module(f"{__name__}.{p}").__all__}
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_NAMES) | lazy_all)
