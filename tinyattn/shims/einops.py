"""einops support: ``rearrange``, ``repeat``, ``reduce``, ``einsum``, ``pack``, ``unpack`` on tinyattn tensors.

einops finds a framework's backend by scanning the subclasses of
``einops._backends.AbstractBackend`` the first time it meets an unknown tensor type,
and keeps one whose ``framework_name`` is in ``sys.modules``. So all tinyattn has to
do is define such a subclass (:class:`TinyattnBackend`, built by :func:`register`)
before einops sees a tinyattn tensor. Every backend method is a tinyattn op, so the
results carry autograd like any other tinyattn computation.

Registration is lazy and costs nothing at ``import tinyattn``: if einops is already
imported, :func:`install` registers at once; otherwise it puts a small finder on
``sys.meta_path`` that registers right after ``einops._backends`` is first imported,
and removes itself. (Importing einops eagerly would cost ~2 ms per ``import
tinyattn``, and every user would pay it whether or not they use einops.)

>>> import tinyattn as torch
>>> from einops import rearrange
>>> x = torch.randn(2, 3, 4)
>>> rearrange(x, "b n (h d) -> b h n d", h=2).shape
tinyattn.Size([2, 2, 3, 2])
"""

from __future__ import annotations

import sys

__all__ = ["install", "register"]

_backend_class = None


def register():
    """Define the einops backend for tinyattn (idempotent); return its class."""
    global _backend_class
    if _backend_class is not None:
        return _backend_class
    from einops._backends import AbstractBackend

    class TinyattnBackend(AbstractBackend):
        framework_name = "tinyattn"

        def __init__(self) -> None:
            import tinyattn

            self.tinyattn = tinyattn

        def is_appropriate_type(self, tensor) -> bool:
            return isinstance(tensor, self.tinyattn.Tensor)

        def from_numpy(self, x):
            t = self.tinyattn.from_numpy(x)
            if t.is_floating_point():
                t.requires_grad_(True)
            return t

        def to_numpy(self, x):
            return x.detach().numpy()

        def arange(self, start, stop):
            return self.tinyattn.arange(start, stop, dtype=self.tinyattn.int64)

        def transpose(self, x, axes):
            return x.permute(axes)

        def reduce(self, x, operation, reduced_axes):
            if operation == "min":
                return x.amin(dim=reduced_axes)
            if operation == "max":
                return x.amax(dim=reduced_axes)
            if operation in ("sum", "mean"):
                return getattr(x, operation)(dim=reduced_axes)
            if operation in ("any", "all", "prod"):
                for axis in sorted(reduced_axes, reverse=True):  # one axis at a time
                    x = getattr(x, operation)(dim=axis)
                return x
            raise NotImplementedError(f"Unknown reduction {operation}")

        def stack_on_zeroth_dimension(self, tensors: list):
            return self.tinyattn.stack(tensors)

        def add_axis(self, x, new_position):
            return self.tinyattn.unsqueeze(x, new_position)

        def add_axes(self, x, n_axes, pos2len):
            sizes = [-1] * n_axes
            for position, length in pos2len.items():
                x = self.add_axis(x, position)
                sizes[position] = length
            return x.expand(sizes)

        def tile(self, x, repeats):
            return x.repeat(repeats)

        def concat(self, tensors, axis: int):
            return self.tinyattn.cat(tensors, dim=axis)

        def is_float_type(self, x) -> bool:
            return x.is_floating_point()

        def layers(self):
            return self.tinyattn.nn  # nn.Rearrange, nn.Reduce, nn.EinMix (einops_layers.py)

        def einsum(self, pattern, *x):
            return self.tinyattn.einsum(pattern, *x)

    _backend_class = TinyattnBackend
    return TinyattnBackend


class _RegisterAfterImport:  # a sys.meta_path finder (duck-typed: find_spec is all it needs)
    """Registers the backend once ``einops._backends`` has been imported, then goes away."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "einops._backends":
            return None
        spec = None
        for finder in sys.meta_path:  # whoever would have found it without us
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            _uninstall_finder()
            register()

        spec.loader.exec_module = exec_then_register
        return spec


_finder = _RegisterAfterImport()


def _uninstall_finder() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def install() -> None:
    """Register now if einops is imported, else as soon as it is (called by ``import tinyattn``)."""
    if "einops._backends" in sys.modules:
        register()
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
