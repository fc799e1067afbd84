"""Layer modules. Each file holds one family (linear, activation, normalization, ...)."""

from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import Identity, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .dropout import Dropout
from .linear import LazyLinear, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, KLDivLoss, MSELoss, NLLLoss
from .module import Module
from .normalization import LayerNorm, RMSNorm
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding
from .spatial import Fold, Unfold, Upsample
from . import (
    channelshuffle,
    fold,
    pixelshuffle,
    upsampling,
)  # torch's module paths, attributes as in torch
from .conv import Conv1d, Conv2d, LazyConv1d, LazyConv2d
from .batchnorm import BatchNorm1d, BatchNorm2d, LazyBatchNorm1d, LazyBatchNorm2d

# -- pooling, padding, norms, transposed convolutions --
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
)
from .normalization import GroupNorm, LocalResponseNorm
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .padding import (
    ChannelShuffle,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .spatial import UpsamplingBilinear2d, UpsamplingNearest2d

from .activation import (
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
)
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .flatten import Flatten, Unflatten
from .loss import (
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

# -- bilinear, embedding bags, 3-D convolution and norms --
from .bilinear import Bilinear
from .sparse import EmbeddingBag
from .conv import Conv3d, LazyConv3d
from .batchnorm import BatchNorm3d, LazyBatchNorm3d, SyncBatchNorm
from .instancenorm import (
    InstanceNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from .conv_transpose import (
    ConvTranspose3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss

# -- fractional / 3-D pooling, legacy layers, linear cross entropy --
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d, LPPool3d, MaxUnpool3d
from .legacy import Container, CrossMapLRN2d
from .loss import NLLLoss2d
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
