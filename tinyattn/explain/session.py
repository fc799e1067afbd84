"""One explained backward pass: capture, intercept the first backward, write the page.

A session records the forward from its start, then lets the first backward pass
(``loss.backward()``, ``autograd.backward`` or ``autograd.grad``) run under its tracer.
With ``create_graph=True`` it also waits for the next backward, whose root holds the
recorded backward graph (the second-order view). Then it writes the page.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import autograd as autograd_mod
from .capture import Capture, timer, user_frame

_active: list[Session] = []


class StopScript(BaseException):
    """Raised into a script run by ``python -m tinyattn explain`` once the page is written
    (a BaseException, so that the script's own ``except Exception`` does not catch it)."""


class Session:
    """Capture from ``start()`` until the page is written (``finish``)."""

    def __init__(
        self,
        path,
        *,
        title: str = "",
        check: bool | str = True,
        collapse: bool = True,
        stop_script: bool = False,
    ) -> None:
        self.path = Path(path)
        self.title = title
        self.check = check
        self.collapse = collapse
        self.stop_script = stop_script
        self.capture = Capture()
        self.state = "idle"
        self.written: Path | None = None
        self.seconds = 0.0
        self._orig_run = None

    def start(self) -> Session:
        """Record the forward and wait for the first backward."""
        self.capture.start()
        self._orig_run = autograd_mod.run_backward
        autograd_mod.run_backward = self._run_backward  # (backward() and grad() call it)
        self.state = "waiting"
        _active.append(self)
        return self

    def stop(self) -> None:
        """Restore everything the session wrapped."""
        self.capture.stop()
        if self._orig_run is not None:
            autograd_mod.run_backward = self._orig_run
            self._orig_run = None
        if self in _active:
            _active.remove(self)

    def _run_backward(
        self,
        roots,
        root_grads,
        retain_graph=False,
        capture=None,
        accumulate=True,
        create_graph=False,
    ):
        orig = self._orig_run

        def run():
            return orig(roots, root_grads, retain_graph, capture, accumulate, create_graph)

        if self.state == "waiting":
            self.capture.names_from_frame(user_frame())
            result = self.capture.record_backward(roots, root_grads, run, create_graph)
            if create_graph:
                self.state = "second"
            else:
                self.finish()
            return result
        if self.state == "second":
            self.capture.second_roots = list(roots)
            result = run()
            self.finish()
            return result
        return run()

    def finish(self) -> Path | None:
        """Build and write the page (once); stop the script if asked to."""
        if self.state in ("done", "idle"):
            return self.written
        self.stop()
        if not self.capture.steps and not self.capture.roots:
            self.state = "done"
            return None
        self.state = "done"
        self.written = write_page(self.capture, self.path, self.title, self.check, self.collapse)
        if self.stop_script:
            raise StopScript
        return self.written

    def explain_last_output(self, seed: int = 0) -> bool:
        """No backward ran: backpropagate a fixed random gradient from the biggest output."""
        from ..core.engine import run_backward

        fwd = self.capture.forward
        self.capture.assign_names()
        used = {c for node in fwd for c in node.next_nodes if c is not None}
        roots = [n for n in fwd if n not in used]
        if not roots:
            return False
        sizes = {n: _reachable(n) for n in roots}
        root = max(roots, key=lambda n: (sizes[n], fwd[n].seq))
        value = fwd[root].value
        rng = np.random.default_rng(seed)
        grad = (rng.standard_normal(value.shape) / np.sqrt(max(value.size, 1))).astype(value.dtype)
        self.capture.stop()
        self.capture.record_backward([root], [grad], lambda: run_backward([root], [grad]), False)
        self.capture.fallback = f"the script ran no backward: this is the gradient of sum({fwd[root].name or 'output'} * R) for a fixed random R (seed {seed})"
        return True


def _reachable(node) -> int:
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(n.next_nodes)
    return len(seen)


def write_page(capture: Capture, path: Path, title: str, check: bool | str, collapse: bool) -> Path:
    """Build the data, render the page and write it; returns the path."""
    from .data import build
    from .page import render

    start = timer()
    data = build(capture, title=title or "tinyattn explain", check=check)
    note = getattr(capture, "fallback", "")
    if note:
        data["note"] = note
    html = render(data, collapse)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    capture.seconds = timer() - start
    return path
