"""The one place tinyattn makes numba functions: ``njit`` and ``vectorize`` whose on-disk
cache can neither break a kernel nor stop a run.

numba keeps compiled kernels in files beside the source (``__pycache__/*.nbi``, the
index, and ``*.nbc``, one per compiled signature), else under ``NUMBA_CACHE_DIR``, else
in the user's cache directory. Two things go wrong in an installed package:

damaged files
    A file that does not unpickle (random bytes, a truncated ``.nbc``, an empty
    ``.nbi``) makes numba raise on every call of that kernel, in every process. Here a
    failed load warns once (:class:`KernelCacheWarning`, naming the file), deletes the
    file, compiles, and saves a good one in its place. A failed save warns and goes on.
no writable place
    A read-only install run by a user without a writable home makes numba refuse to
    build the kernel (``cannot cache function ...: no locator available``). Here the
    search goes on to a private directory in the system's temporary directory, and when
    that is not writable either, the kernel compiles in memory, with one warning.

docs/reliability.md ("Kernel cache") says what a user can do: ``NUMBA_CACHE_DIR`` or
``TINYATTN_KERNELS=numpy``.
"""

from __future__ import annotations

import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Sequence

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserWideCacheLocator
from numba.np.ufunc.dufunc import DUFunc

__all__ = ["KernelCacheWarning", "njit", "vectorize"]


class KernelCacheWarning(RuntimeWarning):
    """numba's on-disk kernel cache could not be read or written; the kernel still runs."""


_warned: set[str] = set()  # what was warned about already (file paths, "no locator")


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, KernelCacheWarning, stacklevel=4)


def _private_temp_dir() -> str:
    """``<tmp>/tinyattn-numba-<uid>``, made 0700; OSError if it is not ours alone."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = os.path.join(
        tempfile.gettempdir(), f"tinyattn-numba-{uid if uid is not None else 'user'}"
    )
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not stat.S_ISDIR(info.st_mode) or shared or (uid is not None and info.st_uid != uid):
        raise PermissionError(
            f"{path} is not a private directory"
        )  # another user could plant files
    return path


class _TempDirLocator(UserWideCacheLocator):
    """The last place tried: a directory of this user's own in the temporary directory."""

    def __init__(self, py_func, py_file) -> None:
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(
            _private_temp_dir(), self.get_suitable_cache_subpath(py_file)
        )

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            return super().from_function(py_func, py_file)
        except OSError:  # raised by _private_temp_dir in __init__
            return None


class _CacheImpl(CompileResultCacheImpl):
    _locator_classes = [*CompileResultCacheImpl._locator_classes, _TempDirLocator]


class _SelfHealingCache(FunctionCache):
    """numba's cache of one function; a file that fails to load is replaced, not fatal."""

    _impl_class = _CacheImpl

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception as error:
            path = self.damaged_file(sig, target_context)
            _warn_once(
                path,
                f"tinyattn: the numba kernel cache file {path} is damaged "
                f"({type(error).__name__}: {error}); compiling {self._py_func.__name__} "
                "again and overwriting the file",
            )
            _remove(path)
            return None  # numba compiles, then save_overload writes the file anew

    def save_overload(self, sig, data) -> None:
        try:
            super().save_overload(sig, data)
        except Exception as error:
            where = self._cache_path
            _warn_once(
                f"save:{where}",
                f"tinyattn: cannot write numba's kernel cache in {where} "
                f"({type(error).__name__}: {error}); {self._py_func.__name__} runs, "
                "compiled again in each new process",
            )

    def damaged_file(self, sig, target_context) -> str:
        """The file that failed to load: the index, else this signature's data file."""
        files = self._cache_file
        try:
            overloads = files._load_index()
        except Exception:
            return files._index_path
        name = overloads.get(self._index_key(sig, target_context.codegen()))
        return files._data_path(name) if name is not None else files._index_path


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # a read-only file stays; saving over it fails and warns


def _cache_for(py_func) -> FunctionCache | None:
    """A self-healing cache for ``py_func``; ``None`` (warned once) when no place is writable."""
    try:
        return _SelfHealingCache(py_func)
    except RuntimeError as error:  # numba: "no locator available for file ..."
        _warn_once(
            "no locator",
            f"tinyattn: no writable place for numba's kernel cache ({error}); kernels are "
            "compiled in memory, again in each new process. Set NUMBA_CACHE_DIR to a "
            "writable directory to keep them, or TINYATTN_KERNELS=numpy to use no kernels",
        )
        return None


def njit(py_func: Callable | None = None, *, cache: bool = False, **options) -> Callable:
    """``numba.njit`` (same options); ``cache=True`` uses the self-healing cache."""

    def decorate(function: Callable) -> Callable:
        dispatcher = numba.njit(**options)(function)
        if cache:
            disk_cache = _cache_for(function)
            if disk_cache is not None:
                dispatcher._cache = disk_cache  # what numba's own enable_caching() sets
        return dispatcher

    return decorate if py_func is None else decorate(py_func)


def vectorize(signatures: Sequence[str], *, cache: bool = False) -> Callable:
    """``numba.vectorize(signatures)``: a NumPy ufunc, built now; ``cache`` as in :func:`njit`."""

    def decorate(function: Callable):
        ufunc = DUFunc(function)
        if cache:
            disk_cache = _cache_for(function)
            if disk_cache is not None:
                ufunc._dispatcher.cache = disk_cache  # what numba's enable_caching() sets
        for signature in signatures:
            ufunc.add(signature)
        ufunc.disable_compile()
        return ufunc.build_ufunc()

    return decorate
