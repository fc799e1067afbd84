"""Which format a file is in, from its bytes (never its name), and the reader for it.

* a zip archive holding ``__tinyattn_index__.npy``: ``tinyattn.save``'s own format;
* a zip archive holding ``<folder>/data.pkl``: ``torch.save``'s zip format;
* a pickle of torch's magic number: ``torch.save``'s legacy format;
* an 8-byte little-endian length then a JSON object: safetensors.

Anything else raises :class:`CheckpointError` saying what the file looks like and which
formats ``tinyattn.load`` reads.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from typing import Any

from .errors import CheckpointError
from .native_reader import _INDEX, _Decoder
from .torch_reader import LEGACY_HEAD, Options, load_torch_legacy, load_torch_zip, torch_zip_prefix

_READS = (
    "tinyattn.load reads files written by tinyattn.save, torch.save (zip and legacy "
    "formats, .pt/.pth/.bin alike) and safetensors"
)


def read_any(fh, name: str, options: Options, resolve: Callable[[str, bool], Any]) -> Any:
    """The object stored in ``fh`` (positioned at the file's start), in whichever format."""
    start = fh.tell()
    size = fh.seek(0, os.SEEK_END) - start
    fh.seek(start)
    head = fh.read(16)
    fh.seek(start)
    if head[:2] == b"PK":
        return _read_zip(fh, name, size, options, resolve)
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        if not head.startswith(LEGACY_HEAD[:14]):
            raise CheckpointError(
                f"tinyattn.load: {name!r} is a pickle stream but not a file written by "
                f"torch.save (its first value is not torch's magic number). {_READS}; plain "
                "pickles are not read, since unpickling can run code"
            )
        if options.mmap_path is not None:
            load_torch_legacy(bytearray(), name, options)  # raises torch's mmap error
        return _guard(lambda: load_torch_legacy(bytearray(fh.read()), name, options), name)
    if len(head) >= 9 and head[8:9] == b"{":
        from .safetensors import read_file  # safetensors is the public module: import late

        return _guard(lambda: read_file(fh, name, size), name)
    raise CheckpointError(
        f"tinyattn.load: {name!r} is not in a format tinyattn reads (it starts with "
        f"{head[:8]!r}). {_READS}"
    )


def _read_zip(fh, name: str, size: int, options: Options, resolve) -> Any:
    def read() -> Any:
        with zipfile.ZipFile(fh) as zf:
            names = zf.namelist()
            if _INDEX + ".npy" in names:
                return _Decoder(zf, name, size, resolve).run()
            if torch_zip_prefix(names) is not None:
                if options.mmap_path is None and options.mmap_requested:
                    return _NEEDS_PATH
                return load_torch_zip(zf, fh, name, size, options)
            if names and all(n.endswith(".npy") for n in names):
                raise CheckpointError(
                    f"tinyattn.load: {name!r} is a NumPy .npz archive without tinyattn's index. "
                    "Read it with numpy.load(f) and wrap the arrays with tinyattn.from_numpy; "
                    f"{_READS}"
                )
            raise CheckpointError(
                f"tinyattn.load: {name!r} is a zip archive but neither a tinyattn.save file "
                f"(no {_INDEX}.npy) nor a torch.save file (no <folder>/data.pkl). {_READS}"
            )

    value = _guard(read, name, "zip archive")
    if value is _NEEDS_PATH:
        raise ValueError("f must be a file path in order to use the mmap argument")
    return value


_NEEDS_PATH = object()  # mmap=True on a torch zip file given as a file object (torch refuses)


def _guard(read: Callable[[], Any], name: str, what: str = "file") -> Any:
    try:
        return read()
    except (CheckpointError, Warning):  # a warning turned into an error stays itself
        raise
    except Exception as e:
        # zipfile, struct and NumPy raise a zoo of types on damaged bytes (BadZipFile,
        # EOFError, struct.error, NotImplementedError, ...): the promise is one type.
        raise CheckpointError(
            f"tinyattn.load: {name!r}: the {what} cannot be read (truncated or corrupted?): "
            f"{type(e).__name__}: {e}"
        ) from e
