"""The differentiable ops, by family (each op: forward and backward together).

- ``elementwise/``: arithmetic, unary, binary, compare, logic, trig, integer_math,
  unary_inplace;
- ``reduce/``: reduction, softmax, cumulative, stats, numeric;
- ``shape/``: views, rearrange, composites, strided;
- ``index/``: indexing, scatter, writes;
- ``linalg/``: matmul, products, matrix_methods, decompositions, helpers, lu, legacy, api;
- ``creation/``: factories, from_buffers, fill;
- ``special/``: functions, igamma;
- ``complex.py`` (complex construction and views), ``sorting.py``, ``windows.py``; ``inplace.py`` (versions and writes through views) and
  ``_util.py`` serve them all.

Each module is also an attribute of ``ops`` under a short name (``ops.unary`` is
``ops.elementwise.unary``, ``ops.shape_composites`` is ``ops.shape.composites``): the Tensor
methods and ``nn`` reach an op as ``ops.<module>.<op>`` at call time. The modules of
``creation``, ``linalg`` and ``special`` are reached through their folder
(``ops.creation.factories``, ``ops.linalg.matmul``, ``ops.special.functions``).
"""

from . import complex, inplace, sorting, windows
from .creation import factories as _factories
from .creation import fill, from_buffers
from .elementwise import (
    arithmetic,
    binary,
    compare,
    integer_math,
    logic,
    trig,
    unary,
    unary_inplace,
)
from .index import indexing, scatter
from .index import writes as index_writes
from .linalg import api as linalg_api
from .linalg import decompositions, lu, matrix_methods, products
from .linalg import helpers as linalg_helpers
from .linalg import legacy as linalg_legacy
from .linalg import matmul as _matmul
from .reduce import cumulative, numeric, reduction, stats
from .reduce import softmax as activation
from .shape import composites as shape_composites
from .shape import rearrange, strided, views
from .special import functions as _special_functions
from .special import igamma
