"""Vault-relative paths: display forms, and confinement of domains and refs (SPEC 7)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from vault_mem.errors import PathRefused

INDEX_DIRNAME = ".vault-mem"
_LOOKALIKES = "\u2044\u2215\uff0f\uff3c\u2024\u2025\uff0e"
_PERCENT = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
# A drive letter is "X:" then a separator (SPEC 7); "C: notes" is an ordinary title.
_DRIVE = re.compile(r"^[A-Za-z]:[/\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def display_path(rel: str) -> str:
    """A vault-relative OS path as a clean '/'-separated string (undecodable bytes become U+FFFD).

    Not NFC-normalised: the path names the file as it is on disk; refs compare folded forms.
    """
    rel = rel.replace(os.sep, "/")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        rel = os.fsencode(rel).decode("utf-8", errors="replace")
    return rel


def check_relative(value: str, param: str) -> str:
    """Refuse a domain or ref that could leave the vault or reach a hidden folder.

    Returns the value with surrounding slashes trimmed. Raises PathRefused naming ``param``.
    """
    if _CONTROL.search(value):
        raise PathRefused(param, "control characters and NUL are not allowed in a path")
    if "\\" in value:
        raise PathRefused(param, "backslashes are not allowed; use '/' between folders")
    if _PERCENT.search(value):
        raise PathRefused(param, "percent-encoded dots, slashes or NUL are not allowed")
    for ch in _LOOKALIKES:
        if ch in value:
            raise PathRefused(
                param, f"the look-alike character U+{ord(ch):04X} is not allowed; use plain '/' and '.'"
            )
    if value.startswith(("/", "~")):
        raise PathRefused(param, "must be relative to the vault (no leading '/' or '~')")
    if _DRIVE.match(value):
        raise PathRefused(param, "drive letters are not allowed; paths are relative to the vault")
    trimmed = value.strip("/")
    for segment in trimmed.split("/"):
        if segment in (".", ".."):
            raise PathRefused(param, "'.' and '..' segments are not allowed")
        if segment.startswith("."):
            raise PathRefused(param, f"hidden folders or files ('{segment}') are not allowed")
    return trimmed


def confine(root: Path, rel: str, param: str) -> Path:
    """The absolute path of ``rel`` under ``root``, refusing anything that resolves outside it."""
    rel = check_relative(rel, param)
    target = root / rel if rel else root
    if not resolves_inside(root, target):
        raise PathRefused(param, "resolves outside the vault (through a symlink?)")
    return target


def resolves_inside(root: Path, target: Path) -> bool:
    """True when ``target``, with every symlink followed, is ``root`` or lies under it."""
    try:
        real_root = root.resolve()
        resolved = target.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False
    return resolved == real_root or real_root in resolved.parents


def note_file(root: Path, fsrel: str, param: str = "ref") -> Path:
    """The file of an indexed note, refusing one that now resolves outside the vault."""
    target = root / fsrel
    if not resolves_inside(root, target):
        raise PathRefused(param, f"{display_path(fsrel)} resolves outside the vault (a symlink?); not read")
    return target
