"""Reading the archives exports come in (a zip, a gzip), bounded and with clear errors.

    is_zip(source) / is_gzip(data)      told by their first bytes, not by the file's name
    open_zip(source) -> ZipFile          InvalidInput("SOURCE") for a truncated or broken zip
    member(zf, info, source) -> bytes    one entry, CRC checked
    gunzip(data, what) -> bytes          the unpacked bytes

Each unpacks at most the ``limit`` given (the ``import_unpacked_bytes`` setting, passed by the format).

An archive is read whole before anything is written (docs/import.md): a broken one is an
error naming the file and what is wrong with it, never a traceback, never a half import.
The bound keeps a small hostile file (a zip bomb) from filling memory: no export these
formats describe comes near it.
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from pathlib import Path
from typing import IO

from vault_mem.errors import InvalidInput


def _head(source: Path, size: int) -> bytes:
    try:
        with open(source, "rb") as handle:
            return handle.read(size)
    except FileNotFoundError:
        raise InvalidInput("SOURCE", f"{source} does not exist; pass the export file to import") from None
    except IsADirectoryError:
        return b""
    except OSError as exc:
        raise InvalidInput("SOURCE", f"{source} cannot be read: {exc.strerror or exc}") from None


def is_zip(source: Path) -> bool:
    """Whether ``source`` is a file that begins as a zip does (``PK``), whatever its name."""
    return source.is_file() and _head(source, 4) in (b"PK\x03\x04", b"PK\x05\x06")


def is_gzip(data: bytes) -> bool:
    return data[:2] == b"\x1f\x8b"


def open_zip(source: Path) -> zipfile.ZipFile:
    """The zip at ``source``; InvalidInput naming it when it is truncated or not a zip."""
    try:
        return zipfile.ZipFile(source)
    except FileNotFoundError:
        raise InvalidInput("SOURCE", f"{source} does not exist; pass the export file to import") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise InvalidInput("SOURCE", f"{source} is not a complete zip ({exc}); was the download cut short? "
                           "Download the export again") from None
    except OSError as exc:
        raise InvalidInput("SOURCE", f"{source} cannot be read: {exc.strerror or exc}") from None


def _too_large(what: str, limit: int) -> InvalidInput:
    size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
    return InvalidInput("SOURCE", f"{what} unpacks to more than {size}; refused (no export of this kind is "
                        "that large)")


def _bounded(stream: IO[bytes] | gzip.GzipFile, what: str, limit: int) -> bytes:
    data = stream.read(limit + 1)  # never more: one byte past the limit says it is too large
    if len(data) > limit:
        raise _too_large(what, limit)
    return data


def member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: Path, limit: int) -> bytes:
    """One entry of ``zf`` whole; InvalidInput when it is damaged, encrypted or larger than
    ``limit`` (what its header says, or what it unpacks to: a header can lie)."""
    what = f"{info.filename!r} in {source.name}"
    if info.file_size > limit:
        raise _too_large(what, limit)
    try:
        with zf.open(info) as stream:
            return _bounded(stream, what, limit)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        raise InvalidInput("SOURCE", f"{what} cannot be unpacked ({exc}); the zip is damaged: download "
                           "the export again") from None
    except RuntimeError as exc:  # an encrypted entry
        raise InvalidInput("SOURCE", f"{what} cannot be unpacked ({exc})") from None


def gunzip(data: bytes, what: str, limit: int) -> bytes:
    """``data`` unpacked; InvalidInput naming ``what`` when it is truncated, damaged or unpacks
    past ``limit``."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return _bounded(stream, what, limit)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput("SOURCE", f"{what} is not a complete gzip file ({exc}); download the export "
                           "again") from None
