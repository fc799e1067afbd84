"""``tinyattn.explain``: one offline HTML page showing a backward pass, step by step.

Three ways in::

    python -m tinyattn explain script.py --out page.html    # the script's first backward

    with tinyattn.explain("page.html"):                     # forward and backward inside
        loss = model(x).sum()
        loss.backward()

    tinyattn.explain(loss, "page.html")                     # runs loss.backward() now

The page holds the backward graph (laid out in Python, drawn as SVG) with names and
source lines from the learner's code, each node's gradient formula, values and
gradients, the engine's order to step through, accumulations, attention maps (P, dP,
dS per head, with checks), an independent finite-difference check of every step, the
gradient flow and, with ``create_graph=True``, the recorded backward graph. It loads
nothing: no network, no CDN, no Graphviz (``docs/explain.md``).

Forward values and source lines are recorded only while a session is open (the
``with`` form and the command line); ``explain(loss, path)`` on a graph built
before shows gradients, formulas and names, without them.
"""

from __future__ import annotations

from ..foundations.type_names import type_name

import os
import sys
import types
from pathlib import Path

from ..core.tensor_base import TensorBase
from .capture import user_frame
from .session import Session, _active

__all__ = ["explain", "Session"]


def explain(
    loss=None,
    path=None,
    *,
    gradient=None,
    title: str = "",
    check: bool | str = True,
    collapse: bool = True,
):
    """Write the page for ``loss``'s backward pass, or open a session (``with`` form).

    ``explain(loss, path)``: run ``loss.backward(gradient)`` under the recorder and write
    the page to ``path`` (default ``explain.html``); returns the path written.
    ``with explain(path):`` records the forward from here and writes the page when the
    first backward inside has run (with ``create_graph=True``: after the next one).
    ``check``: re-run each step's forward to check its gradient (finite differences at
    a few elements and along a random direction); ``"gradcheck"``: also run the full
    float64 ``autograd.gradcheck`` of every op with at most 512 input elements; False: no
    checks. ``collapse``: start big graphs with one box per module.
    """
    if isinstance(loss, (str, os.PathLike)) and path is None:
        loss, path = None, loss
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"explain(): path must be a str or os.PathLike, got {type_name(path)}")
    if loss is not None and not isinstance(loss, TensorBase):
        raise TypeError(
            f"explain(): loss must be a Tensor (or omitted in the with form), got {type_name(loss)}"
        )
    if check not in (True, False, "gradcheck"):
        raise ValueError(f"explain(): check must be True, False or 'gradcheck', got {check!r}")
    target = Path(path if path is not None else "explain.html")
    if loss is None:
        return _Context(target, title, check, collapse)
    if loss._grad_fn is None:
        raise ValueError(
            "explain(): loss has no grad_fn (it is a leaf, or nothing it depends on requires grad)"
        )
    if _active:  # a session is open (the command line, or a with block): it explains this one
        loss.backward(gradient)
        return _active[-1].written or target
    session = Session(target, title=title, check=check, collapse=collapse)
    session.state = "waiting"
    session._orig_run = None
    from .. import autograd as autograd_mod

    session._orig_run = autograd_mod.run_backward
    autograd_mod.run_backward = session._run_backward
    _active.append(session)
    session.capture.names_from_frame(user_frame())
    try:
        loss.backward(gradient)
    finally:
        session.stop()
    session.finish()
    return session.written or target


class _Context:
    """``with tinyattn.explain(path):``: a session around the block."""

    def __init__(self, path: Path, title: str, check: bool | str, collapse: bool) -> None:
        self.session = Session(path, title=title, check=check, collapse=collapse)
        self.nested = False

    def __enter__(self) -> Session:
        if _active:  # (inside the command line's session: that one explains)
            self.nested = True
            return _active[-1]
        return self.session.start()

    def __exit__(self, *exc) -> None:
        if self.nested:
            return
        if exc[0] is not None:
            self.session.stop()
            return
        self.session.finish()
        self.session.stop()


class _CallableModule(types.ModuleType):
    """This package, callable: ``tinyattn.explain(...)`` is ``tinyattn.explain.explain(...)``."""

    def __call__(self, *args, **kwargs):
        return explain(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
