"""What ``import tinyattn`` loads (checked in fresh subprocesses through sys.modules; not timed)."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_tinyattn_does_not_import_numba_scipy_or_the_lazy_subpackages():
    out = _run(
        """
        import sys
        import tinyattn
        heavy = ["numba", "scipy", "llvmlite", "tinyattn.nn", "tinyattn.optim", "tinyattn.viz",
                 "tinyattn.serialization", "tinyattn.kernels._numba_flash"]
        print([m for m in heavy if m in sys.modules])
        """
    )
    assert out == "[]"


def test_the_subprocess_imports_this_checkout():
    assert _run("import tinyattn; print(tinyattn.__file__)").startswith(ROOT)


def test_lazy_attributes_resolve_and_are_listed():
    out = _run(
        """
        import sys
        import tinyattn
        assert "nn" in dir(tinyattn) and "save" in dir(tinyattn)
        layer = tinyattn.nn.Linear(2, 3)             # subpackage on first access
        from tinyattn import optim                   # from-import of a lazy subpackage
        opt = optim.SGD(layer.parameters(), lr=0.1)
        assert tinyattn.save.__module__ == "tinyattn.io.serialization"
        assert tinyattn.compile.__module__ == "tinyattn.shims.compile"
        assert tinyattn.autocast is tinyattn.amp.autocast
        assert tinyattn.nn.functional.softmax is not None
        try:
            tinyattn.no_such_name
        except AttributeError as e:
            print(e)
        """
    )
    assert out == "module 'tinyattn' has no attribute 'no_such_name'"


def test_choosing_numpys_blas_does_not_import_scipy():
    pytest.importorskip("numba")
    out = _run(
        """
        import os, sys
        os.environ.pop("TINYATTN_BLAS", None)
        from tinyattn.kernels import _blas
        found = _blas.numpy_blas() is not None
        print(_blas.blas_backend(), found, "scipy" in sys.modules)
        """
    )
    backend, found, scipy_loaded = out.split()
    if found == "True":
        assert backend == "numpy" and scipy_loaded == "False"
