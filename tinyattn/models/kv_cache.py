"""A preallocated key/value cache for generation: the fast path beside concatenation.

Autoregressive decoding runs each new token through the model once and lets it attend to
the keys and values of every earlier position. The usual way to keep them, and what most
torch code writes, is to concatenate::

    k = torch.cat([past_k, k], dim=2)        # copies the whole cache at every step

which copies all the cached keys and values of every layer at every step: for T steps the
copies add up to O(T^2) memory traffic, and each step allocates a fresh cache. ``KVCache``
allocates one buffer per layer for ``max_len`` positions up front and writes each step's
keys and values into it in place; attention then reads a view of the filled part (no
copy). The numbers are the same as concatenation's, bit for bit.

It is an inference path: the buffers are plain storage outside the autograd graph, so
``update`` refuses keys that require a gradient (use concatenation to train through a
cache).
"""

from __future__ import annotations

import numpy as np

from ..core.grad_mode import _state as _grad_mode
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor


class KVCache:
    """Keys and values of ``n_layer`` attention layers, preallocated for ``max_len`` positions.

    Parameters
    ----------
    n_layer, n_head, max_len, head_dim : int
        Layers, heads per layer, positions kept, and the size of one head's key/value.
    batch : int
        Sequences decoded together (default 1).
    dtype : NumPy dtype of the buffers (default float32, the models' dtype).

    ``update(key, value, layer)`` takes one layer's new keys and values,
    ``(batch, n_head, t, head_dim)``, writes them after that layer's earlier ones and
    returns all of them so far, ``(batch, n_head, length, head_dim)``: views of the buffers,
    valid until :meth:`reset`. It follows ``transformers``' ``Cache.update`` order
    (key, value, layer index).

    >>> import tinyattn
    >>> cache = KVCache(n_layer=1, n_head=2, max_len=8, head_dim=4)
    >>> k, v = cache.update(tinyattn.ones(1, 2, 3, 4), tinyattn.zeros(1, 2, 3, 4), 0)
    >>> tuple(k.shape), cache.length
    ((1, 2, 3, 4), 3)
    """

    def __init__(
        self,
        n_layer: int,
        n_head: int,
        max_len: int,
        head_dim: int,
        batch: int = 1,
        dtype=np.float32,
    ) -> None:
        sizes = dict(n_layer=n_layer, n_head=n_head, max_len=max_len, head_dim=head_dim)
        for name, value in dict(sizes, batch=batch).items():
            if type(value) is not int or value < 1:
                raise ValueError(f"KVCache: {name} must be an int >= 1, got {value!r}")
        shape = (n_layer, batch, n_head, max_len, head_dim)
        self.keys = np.zeros(shape, dtype)
        self.values = np.zeros(shape, dtype)
        self.lengths = [0] * n_layer

    @property
    def length(self) -> int:
        """Positions held so far (layer 0's: the offset of the next token's position)."""
        return self.lengths[0]

    @property
    def max_len(self) -> int:
        """Positions the buffers hold."""
        return self.keys.shape[3]

    def reset(self) -> None:
        """Forget every position (the buffers are reused; earlier views see new data)."""
        self.lengths = [0] * len(self.lengths)

    def update(self, key: Tensor, value: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """Append ``key``/``value`` (batch, n_head, t, head_dim) to ``layer``'s positions;
        returns that layer's keys and values so far (views of the buffers)."""
        if type(layer) is not int or not 0 <= layer < len(self.lengths):
            raise IndexError(
                f"KVCache.update: layer must be in [0, {len(self.lengths)}), got {layer!r}"
            )
        if not (isinstance(key, Tensor) and isinstance(value, Tensor)):
            name, t = ("key", key) if not isinstance(key, Tensor) else ("value", value)
            raise TypeError(f"KVCache.update: {name} must be a Tensor, got {type_name(t)}")
        if _grad_mode.enabled and (key._requires_grad or value._requires_grad):
            name = "key" if key._requires_grad else "value"
            raise RuntimeError(
                f"KVCache.update: {name} requires grad; the preallocated cache is an "
                "inference path (call it under no_grad or inference_mode, or concatenate "
                "the keys and values to keep their gradients)"
            )
        _, batch, heads, max_len, head_dim = self.keys.shape
        start = self.lengths[layer]
        k, v = key._data, value._data  # (shapes off the arrays: no Size object per check)
        t = k.shape[2] if k.ndim == 4 else -1
        expected = (batch, heads, t, head_dim)
        if k.shape != expected or v.shape != expected:
            name, tensor = ("key", k) if k.shape != expected else ("value", v)
            raise ValueError(
                f"KVCache.update: {name} must have shape (batch={batch}, n_head={heads}, "
                f"t, head_dim={head_dim}) like key, got {list(tensor.shape)}"
            )
        if start + t > max_len:
            raise ValueError(
                f"KVCache.update: {start} + {t} positions exceed max_len={max_len} (layer {layer})"
            )
        end = start + t
        self.keys[layer, :, :, start:end] = k
        self.values[layer, :, :, start:end] = v
        self.lengths[layer] = end
        return (
            Tensor._make(self.keys[layer, :, :, :end]),
            Tensor._make(self.values[layer, :, :, :end]),
        )
