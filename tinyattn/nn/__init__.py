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
from .parameter import Buffer, Parameter, UninitializedParameter
