"""``tinyattn.special``: the subset of ``torch.special`` tinyattn provides.

Names that torch.special shares with the main namespace are the same ops (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``, ``psi`` is ``digamma`` ...); the others
(``erfcx``, ``ndtr``, ``ndtri``, ``log_ndtr``, ``entr``, Bessel ``i0e``, ``i1``, ``i1e``,
``xlog1py``, ``zeta``) are in ``ops/special/functions.py``, their math in ``ops/special/_math.py``.
"""

from __future__ import annotations

from ..tensor_api.tensor import Tensor
from ..ops.elementwise.binary import xlogy
from ..ops.elementwise.trig import sinc
from ..ops.elementwise.unary import erf, expm1, log1p, round, sigmoid
from ..ops.elementwise.unary_inplace import exp2, logit
from ..ops.reduce.reduction import logsumexp
from ..ops.reduce.softmax import log_softmax, softmax
from ..ops.special.functions import (
    digamma,
    entr,
    erfc,
    erfcx,
    erfinv,
    i0,
    i0e,
    i1,
    i1e,
    lgamma,
    log_ndtr,
    mvlgamma,
    ndtr,
    ndtri,
    polygamma,
    xlog1py,
    zeta,
)

expit = sigmoid
gammaln = lgamma
psi = digamma


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function (``tinyattn.mvlgamma``)."""
    return mvlgamma(input, p)


__all__ = [
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0",
    "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax",
    "xlog1py", "xlogy", "zeta",
]  # fmt: skip

# torch's out= keyword (tinyattn/torch_surface/out.py; the names are data in tinyattn/torch_surface/out_table.py)
from ..torch_surface.out import install as _install_out
from ..torch_surface.out_table import OUT_SPECIAL as _OUT_NAMES

_install_out(globals(), _OUT_NAMES, "special_")
