"""Empty inputs behave as torch: every ``tinyattn.nn`` layer, each dimension set to 0 in turn.

``LAYERS`` describes how to build each layer and its inputs with named dimensions (N
batch, C channels or features, L/S lengths, H, W, T spatial); ``cases()`` makes one
case per layer and per dimension it uses, with that dimension 0 (in the inputs and in the
constructor arguments that name it). tinyattn and torch (parameters copied from
tinyattn) must then agree: both raise, or both return the same shapes and values.
``DIFFERENCES`` lists, with the reason, the cases where they legitimately do not.
A test checks that ``LAYERS`` and ``NOT_LAYERS`` cover every class in ``tinyattn.nn``.
docs/reliability.md ("Empty inputs") has the summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F

SIZES = {"N": 2, "C": 3, "L": 6, "S": 5, "H": 4, "W": 4, "T": 4, "Q": 4}


@dataclass(frozen=True)
class Dim:
    """A constructor argument that is the size of a named dimension."""

    name: str


@dataclass
class Layer:
    """How to build a layer (args may hold :class:`Dim`) and its inputs.

    Each input is "kind:dims", dims one letter of ``SIZES`` or a number per dimension,
    separated by spaces or written together when all are letters. Kinds: x (normal),
    pos (positive), prob (in (0, 1)), sign (+-1), bits (0/1), cls(X) (integers in
    [0, size of X)).
    """

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    inputs: tuple = ("x:NCL",)
    train: bool = True  # False for layers that are random in training (dropout, RReLU)
    build: object = None  # build(nn, sizes) instead of nn.<name>(*args, **kwargs)


def spec(*args, inputs=("x:NCL",), train=True, build=None, **kwargs) -> Layer:
    return Layer(args, kwargs, tuple(inputs), train, build)


NCL, NCHW, NCTHW = ("x:NCL",), ("x:NCHW",), ("x:NCTHW",)
PAIR = ("x:NC", "x:NC")
C = Dim("C")

LAYERS = {
    **{f"AdaptiveAvgPool{n}d": spec((3,) if n == 1 else (2,) * n, inputs=i)
       for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    **{f"AdaptiveMaxPool{n}d": spec((3,) if n == 1 else (2,) * n, inputs=i)
       for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    **{f"{kind}Pool{n}d": spec(2, inputs=i)
       for kind in ("Avg", "Max") for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    **{f"LPPool{n}d": spec(2, 2, inputs=i) for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    **{f"MaxUnpool{n}d": spec(2, build="unpool", inputs=i)
       for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    "FractionalMaxPool2d": spec(2, output_size=2, inputs=NCHW, build="random"),
    "FractionalMaxPool3d": spec(2, output_size=2, inputs=NCTHW, build="random"),
    **{name: spec() for name in (
        "CELU", "ELU", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
        "LeakyReLU", "LogSigmoid", "Mish", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid",
        "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Identity", "PReLU",
        "Flatten", "GLU")},
    "Threshold": spec(0.1, 20.0),
    "RReLU": spec(train=False),
    **{name: spec(dim=1) for name in ("Softmax", "LogSoftmax", "Softmin")},
    "Softmax2d": spec(inputs=NCHW),
    **{name: spec(train=False) for name in ("AlphaDropout", "Dropout", "Dropout1d", "FeatureAlphaDropout")},
    "Dropout2d": spec(train=False, inputs=NCHW),
    "Dropout3d": spec(train=False, inputs=NCTHW),
    **{f"{lazy}BatchNorm{n}d": spec(*(() if lazy else (C,)), inputs=i)
       for lazy in ("", "Lazy") for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    **{f"{lazy}InstanceNorm{n}d": spec(*(() if lazy else (C,)), inputs=i)
       for lazy in ("", "Lazy") for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    "SyncBatchNorm": spec(C),
    "GroupNorm": spec(1, C),
    "LayerNorm": spec(Dim("L")),
    "RMSNorm": spec(Dim("L")),
    "LocalResponseNorm": spec(2),
    "CrossMapLRN2d": spec(3, inputs=NCHW),
    **{f"{lazy}Conv{t}{n}d": spec(*(() if lazy else (C,)), 4, 3, inputs=i)
       for lazy in ("", "Lazy") for t in ("", "Transpose")
       for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    "Linear": spec(C, 4, inputs=("x:NC",)),
    "LazyLinear": spec(4, inputs=("x:NC",)),
    "NonDynamicallyQuantizableLinear": spec(C, 4, inputs=("x:NC",)),
    "Bilinear": spec(C, C, 4, inputs=PAIR),
    "Unflatten": spec(1, (C, 1)),
    "Embedding": spec(5, 4, inputs=("cls(Q):NL",)),
    "EmbeddingBag": spec(5, 4, inputs=("cls(Q):NL",)),
    "Fold": spec((4, 4), 2, inputs=("x:N 12 9",)),
    "Unfold": spec(2, inputs=NCHW),
    "ChannelShuffle": spec(3, inputs=NCHW),
    **{f"{kind}Pad{n}d": spec(1, *((0.5,) if kind == "Constant" else ()), inputs=i)
       for kind in ("Circular", "Constant", "Reflection", "Replication", "Zero")
       for n, i in ((1, NCL), (2, NCHW), (3, NCTHW))},
    "PixelShuffle": spec(2, inputs=("x:NQHW",)),
    "PixelUnshuffle": spec(2, inputs=NCHW),
    "Upsample": spec(scale_factor=2.0),
    "UpsamplingBilinear2d": spec(scale_factor=2.0, inputs=NCHW),
    "UpsamplingNearest2d": spec(scale_factor=2.0, inputs=NCHW),
    "CosineSimilarity": spec(inputs=PAIR),
    "PairwiseDistance": spec(inputs=PAIR),
    "BCELoss": spec(inputs=("prob:NC", "prob:NC")),
    "BCEWithLogitsLoss": spec(inputs=("x:NC", "prob:NC")),
    "CrossEntropyLoss": spec(inputs=("x:NC", "cls(C):N")),
    "NLLLoss": spec(inputs=("x:NC", "cls(C):N")),
    "NLLLoss2d": spec(inputs=("x:NCHW", "cls(C):NHW")),
    "MultiMarginLoss": spec(inputs=("x:NC", "cls(C):N")),
    "MultiLabelMarginLoss": spec(inputs=("x:NC", "cls(C):NC")),
    "MultiLabelSoftMarginLoss": spec(inputs=("x:NC", "bits:NC")),
    "CosineEmbeddingLoss": spec(inputs=("x:NC", "x:NC", "sign:N")),
    "GaussianNLLLoss": spec(inputs=("x:NC", "x:NC", "pos:NC")),
    "HingeEmbeddingLoss": spec(inputs=("x:NC", "sign:NC")),
    "SoftMarginLoss": spec(inputs=("x:NC", "sign:NC")),
    **{name: spec(inputs=PAIR) for name in ("HuberLoss", "L1Loss", "MSELoss", "SmoothL1Loss")},
    "KLDivLoss": spec(reduction="batchmean", inputs=("x:NC", "prob:NC")),
    "PoissonNLLLoss": spec(inputs=("x:NC", "pos:NC")),
    "MarginRankingLoss": spec(inputs=("x:N", "x:N", "sign:N")),
    "TripletMarginLoss": spec(inputs=("x:NC",) * 3),
    "TripletMarginWithDistanceLoss": spec(inputs=("x:NC",) * 3),
    "CTCLoss": spec(build="ctc", inputs=("x:TNC",)),
    "AdaptiveLogSoftmaxWithLoss": spec(C, 6, [2], inputs=("x:NC", "cls(L):N")),
    "LinearCrossEntropyLoss": spec(C, 5, inputs=("x:NC", "cls(Q):N")),
    **{name: spec(C, 4, inputs=("x:LNC",)) for name in ("RNN", "LSTM", "GRU")},
    **{name: spec(C, 4, inputs=("x:NC",)) for name in ("RNNCell", "LSTMCell", "GRUCell")},
    "MultiheadAttention": spec(4, 2, inputs=("x:L N 4", "x:S N 4", "x:S N 4")),
    "TransformerEncoderLayer": spec(4, 2, 8, 0.0, inputs=("x:L N 4",)),
    "TransformerDecoderLayer": spec(4, 2, 8, 0.0, inputs=("x:L N 4", "x:S N 4")),
    "TransformerEncoder": spec(build="encoder", inputs=("x:L N 4",)),
    "TransformerDecoder": spec(build="decoder", inputs=("x:L N 4", "x:S N 4")),
    "Transformer": spec(4, 2, 1, 1, 8, 0.0, inputs=("x:S N 4", "x:L N 4")),
}  # fmt: skip

# Classes of tinyattn.nn that are not layers with an input to make empty.
NOT_LAYERS = {
    "Module": "the base class",
    "Container": "a deprecated base class",
    "Sequential": "a container: its layers are audited",
    "ModuleList": "a container",
    "ModuleDict": "a container",
    "ParameterList": "a container of parameters, no forward",
    "ParameterDict": "a container of parameters, no forward",
    "DataParallel": "a wrapper that calls its module (CPU only)",
    "RNNBase": "the base class of RNN, LSTM, GRU",
    "RNNCellBase": "the base class of the cells",
}


# Cases (layer, zero dimension) where tinyattn and torch legitimately differ.
# (FractionalMaxPool draws random pooling regions, different ones in each library: only
# shapes, or both raising, are compared for it; see ``compare``.)
def _each(names, dims):
    return {(name, dim) for name in names.split() for dim in dims}


# Mean over no samples: torch returns uninitialised memory (a different number each run,
# NaN by chance too), so its values cannot be compared; tinyattn must give NaN, as torch's
# own MSELoss, L1Loss, ... do for a mean over nothing, with torch's shape.
TORCH_UNINITIALISED = _each("MultiMarginLoss MultiLabelMarginLoss", "N")


DIFFERENCES = {
    # torch's result is wrong for the empty input; tinyattn's is the formula's.
    # 0 input channels: torch returns 0 output channels; the layer has 4 (each = its bias).
    *_each("Conv1d Conv2d Conv3d LazyConv1d LazyConv2d LazyConv3d", "C"),
    # torch returns the input's own shape for any empty input; (N, C*4, H/2, W/2) is right.
    *_each("PixelUnshuffle", "NCHW"),
    # torch raises; tinyattn returns the empty result (or, where an output dim stays
    # non-empty, the part the formula gives: the bias, 0 losses).
    # 0 channels: torch's batch norm kernels index channel 0 (IndexError); Bilinear
    # (in1_features=0) refuses at construction; the padding, unfold and
    # upsampling kernels and multilabel_margin_loss ask for non-empty channels.
    *_each(
        "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d "
        "CrossMapLRN2d Bilinear ReflectionPad1d ReflectionPad2d ReflectionPad3d "
        "ReplicationPad1d ReplicationPad2d ReplicationPad3d Unfold Upsample "
        "UpsamplingBilinear2d UpsamplingNearest2d MultiLabelMarginLoss",
        "C",
    ),
    # torch's lazy instance norms fail to infer their size from any empty input.
    *_each("LazyInstanceNorm1d", "NCL"),
    *_each("LazyInstanceNorm2d", "NCHW"),
    *_each("LazyInstanceNorm3d", "NCTHW"),
    # a depth-0 input to a transposed conv still has an output of depth (0 - 1) + 3 = 2
    # (the bias); torch's 3d kernel refuses it (its 1d and 2d ones agree with tinyattn).
    *_each("ConvTranspose3d LazyConvTranspose3d", "T"),
    # ctc_loss over no sequences: torch raises; tinyattn returns the mean over none (NaN).
    ("CTCLoss", "N"),
    # bags of 0 items: torch's offsets step of 0 raises; tinyattn returns the empty bags'
    # value, 0, as torch does for an empty bag given through offsets.
    ("EmbeddingBag", "L"),
}


def resolve(value, sizes):
    """``value`` with each :class:`Dim` replaced by its size (inside tuples and lists too)."""
    if isinstance(value, Dim):
        return sizes[value.name]
    if isinstance(value, (tuple, list)):
        return type(value)(resolve(v, sizes) for v in value)
    return value


def _dims(spec: str) -> list[str]:
    return spec.split() if " " in spec else list(spec)


def make_input(spec: str, sizes: dict, rng) -> np.ndarray:
    kind, dims = spec.split(":")
    shape = tuple(int(d) if d.isdigit() else sizes[d] for d in _dims(dims))
    if kind.startswith("cls"):
        high = SIZES[kind[4]]  # the range is not made empty with the dimension
        return rng.integers(0, high, size=shape)
    draw = {
        "x": lambda: rng.standard_normal(shape),
        "pos": lambda: rng.uniform(0.1, 2.0, shape),
        "prob": lambda: rng.uniform(0.05, 0.95, shape),
        "sign": lambda: rng.choice([-1.0, 1.0], shape),
        "bits": lambda: rng.integers(0, 2, shape).astype(float),
    }[kind]
    return draw().astype(np.float32)


def used_dims(layer: Layer) -> list[str]:
    found = [d for spec in layer.inputs for d in _dims(spec.split(":")[1]) if d in SIZES]
    found += [d.name for d in _flat(layer.args) if isinstance(d, Dim)]
    return sorted(set(found), key="NCLSHWTQ".index)


def _flat(values):
    for value in values:
        if isinstance(value, (tuple, list)):
            yield from _flat(value)
        else:
            yield value


def cases():
    for name, layer in sorted(LAYERS.items()):
        for dim in used_dims(layer):
            yield pytest.param(name, dim, id=f"{name}-{dim}=0")


# -- running one case in one library ---------------------------------------------------------
def build(lib, name: str, layer: Layer, sizes: dict):
    nn = lib.nn
    if layer.build == "encoder":
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, 0.0), 2)
    if layer.build == "decoder":
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, 0.0), 2)
    cls = getattr(nn, name, None) or getattr(nn.modules.linear, name)  # torch keeps one there
    return cls(*resolve(layer.args, sizes), **layer.kwargs)


def inputs_for(lib, name: str, layer: Layer, arrays: list) -> list:
    tensors = [lib.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    if layer.build == "unpool":  # values and the indices a MaxPool of them gives
        pool = getattr(lib.nn.functional, f"max_pool{name[-2]}d")
        return list(pool(tensors[0], 2, return_indices=True))
    if layer.build == "ctc":  # log-probs (T, N, C), targets, input and target lengths
        log_probs = tensors[0].log_softmax(-1)
        T, N, classes = arrays[0].shape
        targets = (
            lib.ones((N, 2), dtype=lib.long) if classes > 1 else lib.zeros((N, 2), dtype=lib.long)
        )
        return [
            log_probs,
            targets,
            lib.full((N,), T, dtype=lib.long),
            lib.full((N,), min(2, T), dtype=lib.long),
        ]
    return tensors


def outcome(lib, name: str, layer: Layer, arrays: list, sizes: dict, state=None):
    """("raises", type name) or ("returns", [arrays]); and the layer's state to copy."""
    try:
        module = build(lib, name, layer, sizes)
        if state is not None:
            module.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
        module.train(layer.train)
        out = module(*inputs_for(lib, name, layer, arrays))
    except Exception as error:  # the outcome is what is compared
        return ("raises", type(error).__name__), None
    leaves = [t.detach().numpy().copy() for t in _tensors(out)]
    return ("returns", leaves), {
        k: v.detach().numpy().copy() for k, v in module.state_dict().items()
    }


def _tensors(out):
    if isinstance(out, (tuple, list)):
        for item in out:
            yield from _tensors(item)
    elif out is not None and hasattr(out, "shape") and hasattr(out, "detach"):
        yield out


def compare(name: str, dim: str, torch):
    """Both outcomes, and whether they agree (shapes only for random layers)."""
    layer = LAYERS[name]
    sizes = {**SIZES, dim: 0}
    rng = np.random.default_rng(0)
    arrays = [make_input(spec, sizes, rng) for spec in layer.inputs]
    tinyattn.manual_seed(0)
    ours, state = outcome(tinyattn, name, layer, arrays, sizes)
    theirs, _ = outcome(torch, name, layer, arrays, sizes, state=state if state else None)
    if ours[0] != theirs[0] or ours[0] == "raises":
        return ours, theirs, ours[0] == theirs[0]
    shapes_agree = [a.shape for a in ours[1]] == [b.shape for b in theirs[1]]
    if layer.build == "random" or not shapes_agree:
        return ours, theirs, shapes_agree
    values_agree = all(
        np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True) for a, b in zip(ours[1], theirs[1])
    )
    return ours, theirs, values_agree


def _summary(result) -> str:
    kind, what = result
    return f"raises {what}" if kind == "raises" else f"returns shapes {[a.shape for a in what]}"


@pytest.mark.parametrize("name, dim", list(cases()))
def test_empty_input_as_torch(name, dim):
    torch = pytest.importorskip("torch")
    ours, theirs, agree = compare(name, dim, torch)
    if (name, dim) in TORCH_UNINITIALISED:
        assert ours[0] == theirs[0] == "returns", f"{_summary(ours)} vs {_summary(theirs)}"
        assert [a.shape for a in ours[1]] == [b.shape for b in theirs[1]]
        assert all(np.isnan(a).all() for a in ours[1]), f"{name}: {ours[1]} is not NaN"
        return
    if (name, dim) in DIFFERENCES:
        assert not agree, f"{name} with {dim}=0 now agrees with torch: drop it from DIFFERENCES"
        return
    assert agree, f"{name}, {dim}=0: tinyattn {_summary(ours)}, torch {_summary(theirs)}"


def test_every_nn_class_is_audited_or_listed():
    classes = {
        name
        for name, value in vars(tinyattn.nn).items()
        if isinstance(value, type) and issubclass(value, tinyattn.nn.Module)
    }
    assert classes - set(LAYERS) - set(NOT_LAYERS) == set()
    assert set(LAYERS) - classes == set() and set(NOT_LAYERS) - classes == set()


# -- the reported instances, without torch ---------------------------------------------------
@pytest.mark.parametrize(
    "query, key, out_shape",
    [
        ((0, 3, 4), (0, 5, 4), (0, 3, 4)),
        ((2, 3, 4), (2, 0, 4), (2, 3, 4)),
        ((2, 0, 4), (2, 5, 4), (2, 0, 4)),
    ],
    ids=["batch", "keys", "queries"],
)
def test_multihead_attention_with_an_empty_dimension(query, key, out_shape):
    """Before: reshape: shape '[3, 0, 2, -1]' is invalid for input of size 0."""
    mha = tinyattn.nn.MultiheadAttention(4, 2, batch_first=True)
    q, k = tinyattn.randn(*query, requires_grad=True), tinyattn.randn(*key)
    out, weights = mha(q, k, k)
    assert tuple(out.shape) == out_shape and tuple(weights.shape) == (query[0], query[1], key[1])
    expected = np.broadcast_to(mha.out_proj.bias.detach().numpy(), out_shape)  # no key: 0 @ W + b
    np.testing.assert_allclose(out.detach().numpy(), expected, atol=1e-7)
    out.sum().backward()
    assert q.grad is not None and tuple(q.grad.shape) == query


def test_attention_with_head_dim_zero_is_the_mean_of_v():
    """Before: ZeroDivisionError. Every score is 0, so the weights are uniform."""
    q, k = tinyattn.randn(2, 3, 0), tinyattn.randn(2, 5, 0)
    v = tinyattn.randn(2, 5, 4, requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v)
    expected = np.broadcast_to(v.detach().numpy().mean(1, keepdims=True), (2, 3, 4))
    # float32: the kernel's weighted sum and NumPy's mean round differently (|v| ~ 1)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-6, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), np.full((2, 5, 4), 3 / 5), rtol=1e-6)
    assert math.isfinite(float(out.sum()))
