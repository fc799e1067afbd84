"""NumPy's floating-point warnings are off while ops compute, as torch never warns.

torch returns inf/NaN silently for ``log(0)``, ``sqrt(-1)``, ``0/0``, ``inf - inf`` or an
overflow; NumPy computes the same values but emits a ``RuntimeWarning``. Every op's
``forward`` (``Function.apply``) and the whole backward pass (``engine.run_backward``)
therefore run with NumPy's error state set to "ignore", and restored afterwards, so user
code around them keeps its own ``np.seterr`` / ``np.errstate``.

``np.errstate`` builds its state object on every entry (~1 us, as much as a small op's
whole overhead). NumPy 2 keeps the state in a context variable; setting it to a state
made once costs ~0.1 us. Those two names are private to NumPy, so on a NumPy without
them ``np.errstate`` is used instead (same effect, slower).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np


def _numpy_state():
    try:
        from numpy._core import _ufunc_config, umath

        variable = _ufunc_config._extobj_contextvar
        return variable, umath._make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):
        return None


_STATE = _numpy_state()

if _STATE is not None:
    _variable, IGNORE_ALL = _STATE
    enter = _variable.set  # enter(IGNORE_ALL) -> token
    leave = _variable.reset  # leave(token)
else:  # pragma: no cover - NumPy < 2
    IGNORE_ALL = None

    def enter(_state):
        context = np.errstate(all="ignore")
        context.__enter__()
        return context

    def leave(context) -> None:
        context.__exit__(None, None, None)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """NumPy's floating-point warnings off within the block."""
    token = enter(IGNORE_ALL)
    try:
        yield
    finally:
        leave(token)
