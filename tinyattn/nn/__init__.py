"""Neural-network layers with torch's names, signatures, parameter names and init."""

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import (
    GELU,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Identity,
    KLDivLoss,
    LayerNorm,
    LazyLinear,
    Linear,
    LogSoftmax,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ParameterDict,
    ParameterList,
    ReLU,
    RMSNorm,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from .modules import MultiheadAttention
from .modules import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .modules import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .modules import Fold, Unfold, Upsample
from .modules import Conv1d, Conv2d, LazyConv1d, LazyConv2d
from .modules import BatchNorm1d, BatchNorm2d, LazyBatchNorm1d, LazyBatchNorm2d
from .parameter import Buffer, Parameter, UninitializedParameter

# torch.nn.attention (sdpa_kernel, flex_attention); the star import above bound the name
# to modules/attention.py (the MultiheadAttention file), which is not torch's meaning
del attention  # noqa: F821
from . import attention

# -- one-device parallel wrappers and einops layers ------------------------------------------
from . import parallel
from .parallel import DataParallel

_EINOPS_LAYERS = ("Rearrange", "Reduce", "EinMix")


def __getattr__(name: str):
    """``nn.Rearrange`` / ``nn.Reduce`` / ``nn.EinMix``: imported (with einops) on first use."""
    if name in _EINOPS_LAYERS:
        from .modules import einops_layers

        return getattr(einops_layers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- spatial breadth --
from .modules import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    LPPool1d,
    LPPool2d,
    MaxPool1d,
    MaxPool2d,
    MaxUnpool1d,
    MaxUnpool2d,
)
from .modules import GroupNorm, InstanceNorm1d, InstanceNorm2d, LocalResponseNorm
from .modules import (
    ChannelShuffle,
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .modules import ConvTranspose1d, ConvTranspose2d
from .modules import UpsamplingBilinear2d, UpsamplingNearest2d

# -- activations / losses breadth (branch nnact) --
from .modules import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    SiLU,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
    AlphaDropout,
    CosineSimilarity,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
    Flatten,
    PairwiseDistance,
    Unflatten,
    BCELoss,
    CosineEmbeddingLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    L1Loss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
