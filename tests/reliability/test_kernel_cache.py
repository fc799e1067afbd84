"""numba's on-disk kernel cache can neither break a kernel nor stop a run.

A damaged cache file (each kind: the ``.nbi`` index, a ``.nbc`` data file) is replaced
with one warning naming it; with no writable place for the cache, kernels go to a
private temporary directory, else compile in memory, with one warning. The small
kernels here are made in a module written to ``tmp_path`` through the same
``tinyattn.kernels._jit`` every tinyattn kernel is made with; the last test runs a copy
of the package as a read-only install would (docs/reliability.md, "Kernel cache").
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

import tinyattn
from tinyattn.kernels import _jit

PACKAGE = Path(tinyattn.__file__).resolve().parent

KERNELS = """
import math
from tinyattn.kernels._jit import njit, vectorize


@njit(cache=True)
def add_one(x):
    return x + 1.0


@vectorize(["float64(float64)"], cache=True)
def erf(x):
    return math.erf(x)
"""


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees its own "warn once" (the set is per process)."""
    monkeypatch.setattr(_jit, "_warned", set())


def load(directory: Path, name: str):
    """A fresh import of ``directory/kernels_under_test.py``: new dispatchers, same cache."""
    spec = importlib.util.spec_from_file_location(name, directory / "kernels_under_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_both(module) -> None:
    assert module.add_one(1.0) == 2.0
    assert module.erf(np.array([0.5]))[0] == pytest.approx(0.5204998778130465, abs=1e-15)


@pytest.fixture
def cached(tmp_path):
    """A kernels module whose cache files exist: (directory, index files, data files)."""
    (tmp_path / "kernels_under_test.py").write_text(KERNELS)
    run_both(load(tmp_path, "kernels_first_import"))
    cache = tmp_path / "__pycache__"
    index, data = sorted(cache.glob("*.nbi")), sorted(cache.glob("*.nbc"))
    assert len(index) == len(data) == 2  # one each for add_one and erf
    return tmp_path, index, data


def damage(files, how: str) -> None:
    for path in files:
        content = path.read_bytes()
        if how == "random bytes":
            path.write_bytes(np.random.default_rng(0).bytes(len(content)))
        elif how == "truncated":
            path.write_bytes(content[: len(content) // 2])
        else:
            path.write_bytes(b"")


@pytest.mark.parametrize(
    "kind, how",
    [("nbi", "random bytes"), ("nbi", "empty"), ("nbc", "truncated"), ("nbc", "random bytes")],
)
def test_a_damaged_cache_file_is_recompiled_warned_once_and_overwritten(cached, kind, how):
    directory, index, data = cached
    damaged = index if kind == "nbi" else data
    damage(damaged, how)
    with pytest.warns(_jit.KernelCacheWarning) as record:
        run_both(load(directory, "kernels_damaged"))
    messages = [str(w.message) for w in record]
    for path in damaged:  # each file named once
        assert sum(str(path) in m for m in messages) == 1, messages
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the files were overwritten: a clean load
        healed = load(directory, "kernels_healed")
        run_both(healed)
    assert sum(healed.add_one.stats.cache_hits.values()) == 1


def _no_cache_place_but_temp(monkeypatch, tmp_path: Path, temp: str) -> None:
    """What a read-only install run by a user without a home sees (as root: the paths
    cannot be made, rather than not writable); the temporary directory is ``temp``."""
    (tmp_path / "__pycache__").write_text("a file where numba would make its directory")
    monkeypatch.setenv("HOME", "/dev/null")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setattr("tempfile.tempdir", temp)


def test_with_no_writable_home_kernels_cache_in_a_private_temp_dir(monkeypatch, tmp_path):
    (tmp_path / "kernels_under_test.py").write_text(KERNELS)
    _no_cache_place_but_temp(monkeypatch, tmp_path, str(tmp_path / "tmp"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_both(load(tmp_path, "kernels_in_temp"))
    private = tmp_path / "tmp" / f"tinyattn-numba-{os.getuid()}"
    assert len(list(private.rglob("*.nbi"))) == 2
    assert private.stat().st_mode & 0o777 == 0o700


def test_a_temp_dir_another_user_could_write_is_not_used(monkeypatch, tmp_path):
    (tmp_path / "kernels_under_test.py").write_text(KERNELS)
    _no_cache_place_but_temp(monkeypatch, tmp_path, str(tmp_path / "tmp"))
    shared = tmp_path / "tmp" / f"tinyattn-numba-{os.getuid()}"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    with pytest.warns(_jit.KernelCacheWarning, match="no writable place"):
        run_both(load(tmp_path, "kernels_shared_temp"))
    assert list(shared.iterdir()) == []


def test_with_no_writable_place_at_all_kernels_compile_in_memory_with_one_warning(
    monkeypatch, tmp_path
):
    """Before: numba's RuntimeError "cannot cache function ...: no locator available"."""
    (tmp_path / "kernels_under_test.py").write_text(KERNELS)
    _no_cache_place_but_temp(monkeypatch, tmp_path, "/dev/null/tmp")
    with pytest.warns(_jit.KernelCacheWarning) as record:
        run_both(load(tmp_path, "kernels_in_memory"))
        run_both(load(tmp_path, "kernels_in_memory_again"))
    assert len(record) == 1
    message = str(record[0].message)
    assert "no writable place" in message and "NUMBA_CACHE_DIR" in message


def _cached_dispatchers():
    """Every numba function in tinyattn.kernels made with ``cache=True``."""
    for path in sorted((PACKAGE / "kernels").glob("_numba_*.py")):
        module = importlib.import_module(f"tinyattn.kernels.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, numba.core.dispatcher.Dispatcher):
                if value._cache.__class__.__name__ != "NullCache":
                    yield value


def test_every_cached_tinyattn_kernel_has_the_self_healing_cache():
    """Before: numba's own FunctionCache, which raises on a damaged file."""
    found = list(_cached_dispatchers())
    assert len(found) > 20
    assert all(isinstance(d._cache, _jit._SelfHealingCache) for d in found), [
        d.py_func.__qualname__ for d in found if not isinstance(d._cache, _jit._SelfHealingCache)
    ]


def test_numba_functions_are_made_only_in_kernels_jit():
    """One place makes numba functions, so the cache's handling cannot be bypassed."""
    made_here = re.compile(
        r"^\s*from numba import .*\b(njit|jit|vectorize|guvectorize)\b"
        r"|\bnumba\.(njit|jit|vectorize|guvectorize)\(",
        re.M,
    )
    offenders = [
        f"{path.relative_to(PACKAGE)}: {match.group(0).strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_jit.py"
        for match in made_here.finditer(path.read_text())
    ]
    assert offenders == []


def test_a_read_only_install_without_home_runs_its_kernels(tmp_path):
    """A copy of the package where nothing can be written: gelu's kernel runs, one warning."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "tinyattn", ignore=shutil.ignore_patterns("__pycache__"))
    for directory in [site / "tinyattn", *(site / "tinyattn").rglob("*")]:
        if directory.is_dir():
            (directory / "__pycache__").write_text("not a directory")
    script = (
        "import tempfile, warnings\n"
        "tempfile.tempdir = '/dev/null/tmp'\n"
        "warnings.simplefilter('always')\n"
        "import tinyattn, tinyattn.nn.functional as F\n"
        f"assert tinyattn.__file__.startswith({str(site)!r})\n"
        "print(F.gelu(tinyattn.tensor([0.0, 1.0])).tolist())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME="/dev/null", PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    env.pop("TINYATTN_KERNELS", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = tinyattn.nn.functional.gelu(tinyattn.tensor([0.0, 1.0])).tolist()
    assert done.stdout.strip() == str(expected)
    assert done.stderr.count("KernelCacheWarning") == 1, done.stderr
    assert "no writable place for numba's kernel cache" in done.stderr


def test_the_self_check_runs_a_cached_kernel(capsys, monkeypatch):
    """Before: ``python -m tinyattn`` ran no kernel, and said PASS where every kernel failed."""
    from tinyattn.__main__ import kernel_check
    from tinyattn.kernels import _numba_flash

    monkeypatch.delenv("TINYATTN_KERNELS", raising=False)
    assert kernel_check(np.random.default_rng(0)) == "PASS"
    where = _numba_flash._forward_kernel._cache._cache_path
    assert f"fused attention kernel (numba, cached in {where}): PASS" in capsys.readouterr().out
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    assert kernel_check(np.random.default_rng(0)).startswith("PASS (TINYATTN_KERNELS=numpy")
