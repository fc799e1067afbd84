"""The differentiable ops, by family (each op: forward and backward together).

- ``elementwise/``: arithmetic, unary, binary, compare, logic, trig, integer_math,
  unary_inplace;
- ``reduce/``: reduction, softmax, cumulative, stats, numeric;
- ``shape/``: views, rearrange, composites, strided;
- ``index/``: indexing, scatter, writes;
- ``linalg/``: matmul, products, matrix_methods, decompositions, helpers, lu, legacy, api;
- ``creation/``: factories, from_buffers, fill;
- ``random/``: sampling (rand, randn, randint ...), fills (uniform_, normal_ ...);
- ``special/``: functions, igamma;
- ``complex.py`` (complex construction and views), ``sorting.py``, ``windows.py``; ``inplace.py`` (versions and writes through views) and
  ``_util.py`` serve them all.

Each module is reached by its path: ``ops.elementwise.unary``, ``ops.shape.composites``,
``ops.linalg.matmul`` (the Tensor methods and ``nn`` call ``ops.<family>.<module>.<op>`` at
call time); importing ``ops`` imports every family and its modules.
"""

from . import complex, inplace, sorting, windows
from . import creation, elementwise, index, linalg, random, reduce, shape, special
