"""Neural-network layers with torch's names, signatures, parameter names and init."""

from . import functional, init, utils
from .modules import *  # noqa: F403  (every layer class, the later ones only through this)
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
from ._lazy_buffer import UninitializedBuffer

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
