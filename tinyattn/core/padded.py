"""``PaddedGrad``: the gradient of a slice, zero outside one block, kept as that block.

The backward of a slice ``y = x[..., a:b, ...]`` (``narrow``, and so ``split``,
``chunk``; ``select``, and so ``unbind``) is ``g`` placed in a zero array of x's
shape. When a tensor is split into pieces and every piece is used, the engine
receives one such gradient per piece and adds them up. Built eagerly, each piece
costs a full zero array and each sum a full-size add: for the q, k, v thirds of an
attention layer's in-projection that is three arrays of the whole projection and
two adds over them, where one array and three block copies suffice.

So the NumPy backward of a slice returns ``PaddedGrad(g, pad)``, and the engine
(``engine._add_grads``) builds the full array once, when a second gradient arrives
or when the node's own backward runs, and adds each further block in place. It is
not an ndarray: nothing outside the engine receives one. (``np.asarray`` works on
it, for a teaching tool that looks at a backward's raw result.) Under
``create_graph`` the slice backward runs on Tensors and pads with recorded ops.
"""

from __future__ import annotations

import numpy as np


class PaddedGrad:
    """``zero_pad(array, pad)``, not built yet: ``pad`` is one ``(before, after)`` per axis.

    >>> g = PaddedGrad(np.ones((1, 2)), [(1, 0), (0, 1)])
    >>> g.shape, g.materialize().tolist()
    ((2, 3), [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    """

    __slots__ = ("array", "pad", "shape", "dtype")

    def __init__(self, array: np.ndarray, pad) -> None:
        self.array = array
        self.pad = pad
        self.shape = tuple(n + a + b for n, (a, b) in zip(array.shape, pad))
        self.dtype = array.dtype

    def _block(self) -> tuple:
        return tuple(slice(a, a + n) for n, (a, _) in zip(self.array.shape, self.pad))

    def materialize(self) -> np.ndarray:
        """The full array (new, zero outside the block)."""
        out = np.zeros(self.shape, dtype=self.dtype)
        out[self._block()] = self.array
        return out

    def add_into(self, full: np.ndarray) -> None:
        """``full += self``, touching only the block."""
        full[self._block()] += self.array

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.materialize()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"PaddedGrad(block {self.array.shape} in zeros {self.shape}, pad {self.pad})"
