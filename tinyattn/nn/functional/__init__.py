"""``tinyattn.nn.functional``: stateless layer functions with torch's names and semantics.

Each name is imported once, from the file of its concept: ``basic`` (linear, gelu, dropout,
embedding, one_hot), ``activation``, ``attention`` (scaled_dot_product_attention), ``mha``,
``loss*``, ``conv*``, ``pool*``, ``norm_*``, ``dropout_channel``, ``embedding_bag``,
``sampling_*`` (pad, interpolate, fold/unfold, grid_sample), ``pixel``, ``distance*`` and
``legacy`` (torch's old and kernel-level forms). Ops whose backward reads better fused are
``Function`` classes in those files, each with its gradient formula in the docstring.
"""

from ...ops.elementwise.unary import (
    sigmoid,
    tanh,
)
from ...torch_surface.argument_names import (  # torch.nn.functional's argument order
    log_softmax,
    softmax,
)
from .basic import (
    dropout,
    embedding,
    embedding_renorm_,
    gelu,
    linear,
    one_hot,
)
from .activation import (
    celu,
    celu_,
    elu,
    elu_,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    silu,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)
from .attention import (
    scaled_dot_product_attention,
)
from .mha import (
    multi_head_attention_forward,
)
from .loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    kl_div,
    mse_loss,
    nll_loss,
)
from .loss_elementwise import (
    binary_cross_entropy,
    gaussian_nll_loss,
    huber_loss,
    l1_loss,
    poisson_nll_loss,
    smooth_l1_loss,
)
from .loss_margin import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .loss_ctc import (
    ctc_loss,
)
from .loss_linear_cross_entropy import (
    linear_cross_entropy,
)
from .conv import (
    conv1d,
    conv2d,
    conv3d,
)
from .conv_transpose import (
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .bilinear import (
    bilinear,
)
from .pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
)
from .pool_fractional import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from .pool_lp_unpool import (
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from .norm_layer import (
    layer_norm,
    rms_norm,
)
from .norm_batch import (
    batch_norm,
)
from .norm_group import (
    group_norm,
    instance_norm,
    local_response_norm,
)
from .dropout_channel import (
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .embedding_bag import (
    embedding_bag,
)
from .sampling_spatial import (
    fold,
    pad,
    unfold,
)
from .sampling_upsample import (
    interpolate,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from .sampling_grid import (
    affine_grid,
    grid_sample,
)
from .pixel import (
    channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
)
from .distance import (
    cosine_similarity,
    normalize,
    pairwise_distance,
)
from .distance_pdist import (
    pdist,
)
from .legacy import (
    conv_tbc,
    native_channel_shuffle,
)

__all__ = [
    "sigmoid",
    "tanh",
    "log_softmax",
    "softmax",
    "dropout",
    "embedding",
    "gelu",
    "linear",
    "one_hot",
    "celu",
    "celu_",
    "elu",
    "elu_",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "logsigmoid",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "silu",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
    "threshold_",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "kl_div",
    "mse_loss",
    "nll_loss",
    "binary_cross_entropy",
    "gaussian_nll_loss",
    "huber_loss",
    "l1_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "ctc_loss",
    "linear_cross_entropy",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "bilinear",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "layer_norm",
    "rms_norm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "local_response_norm",
    "alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "embedding_bag",
    "fold",
    "pad",
    "unfold",
    "interpolate",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    "affine_grid",
    "grid_sample",
    "channel_shuffle",
    "pixel_shuffle",
    "pixel_unshuffle",
    "cosine_similarity",
    "normalize",
    "pairwise_distance",
    "pdist",
    "conv_tbc",
    "native_channel_shuffle",
]

# torch's out= keyword (torch_surface/out.py; the names are data in torch_surface/out_table.py)
from ...torch_surface.out import install as _install_out
from ...torch_surface.out_table import OUT_NN_FUNCTIONAL as _OUT_NAMES

_install_out(globals(), _OUT_NAMES, "")
