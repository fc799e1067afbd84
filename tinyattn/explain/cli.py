"""``python -m tinyattn explain script.py [--out page.html]``: run a script, explain its
first backward pass (or, if it runs none, its biggest output) in one HTML page.

``demo`` in place of a script explains one training step of ``python -m tinyattn demo``.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from .capture import timer
from .session import Session, StopScript


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``explain`` subcommand's options."""
    parser.add_argument("script", help="a Python script (or 'demo': one step of the demo model)")
    parser.add_argument("script_args", nargs="*", help="arguments for the script, after --")
    parser.add_argument(
        "--out", default=None, help="the page to write (default: <script>.explain.html)"
    )
    parser.add_argument(
        "--gradcheck",
        action="store_true",
        help="also run the full float64 gradcheck of every op with at most 512 input elements",
    )
    parser.add_argument(
        "--no-check", action="store_true", help="skip the finite-difference check of each step"
    )
    parser.add_argument(
        "--expand", action="store_true", help="start with every node shown, even on big graphs"
    )
    parser.add_argument(
        "--continue",
        dest="keep_running",
        action="store_true",
        help="let the script run on after its first backward",
    )


def _target(script: str, args: list[str]) -> tuple[Path, list[str]]:
    if script == "demo" and not Path(script).exists():
        return Path("tinyattn.demo"), ["--steps", "1", *args]
    path = Path(script)
    if not path.is_file():
        raise SystemExit(f"explain: no such script: {script!r}")
    return path, args


def run(args: argparse.Namespace) -> int:
    """Run the script under a session and write the page; returns an exit code."""
    path, script_args = _target(args.script, [a for a in args.script_args if a != "--"])
    out = Path(args.out) if args.out else Path(f"{Path(args.script).stem}.explain.html")
    session = Session(
        out,
        title=f"tinyattn explain: {Path(args.script).name}",
        check=False if args.no_check else ("gradcheck" if args.gradcheck else True),
        collapse=not args.expand,
        stop_script=not args.keep_running,
    )
    session.capture.script = Path(args.script).name
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *script_args]
    if path.suffix == ".py":
        sys.path.insert(0, str(path.resolve().parent))
    start = timer()
    session.start()
    try:
        if path.suffix == ".py":
            runpy.run_path(str(path), run_name="__main__")
        else:  # (a module: the demo)
            runpy.run_module(str(path), run_name="__main__", alter_sys=True)
    except StopScript:
        pass
    except SystemExit as err:
        if err.code not in (None, 0):
            print(f"explain: the script exited with {err.code}", file=sys.stderr)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        session.stop()  # (also when the script raised: nothing stays wrapped)
    if session.written is None:
        session.stop_script = False
        if session.state == "waiting" and not session.explain_last_output():
            session.stop()
            print(
                "explain: the script built no graph to explain (no tensor that requires grad)",
                file=sys.stderr,
            )
            return 1
        session.finish()  # (the fallback's backward, or a create_graph one without a second)
    size = session.written.stat().st_size
    print(
        f"explain: wrote {session.written} ({size / 1024:.0f} KB, {timer() - start:.1f} s in all, page {session.capture.seconds:.2f} s)"
    )
    return 0
