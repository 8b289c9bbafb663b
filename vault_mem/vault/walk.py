"""Which files are memories: walking the vault with its ignore rules (docs/vault-format.md).

Skipped: hidden segments (``.obsidian``, ``.git``, ``.trash``, the index folder), paths
matched by the root ``.gitignore``, a root ``.vaultmemignore`` and Obsidian's
``userIgnoreFilters``. Symlinked folders are followed only when they stay inside the
vault, outside its hidden folders, and never twice (a loop ends); a symlinked note only when it
leads to a note of the vault (``leads_to_a_note``). Folders that cannot be listed are reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from vault_mem.errors import VaultUnavailable
from vault_mem.vault.paths import NotANote, is_link, link_target, on_disk_spelling


@dataclass
class WalkResult:
    files: list[str] = field(default_factory=list)  # OS paths relative to the root, '/'-separated
    problems: dict[str, str] = field(default_factory=dict)  # folder -> why it was skipped
    skipped_links: dict[str, str] = field(default_factory=dict)  # symlinked note -> why it is none


class IgnoreRules:
    """The vault's ignore rules, loaded once from the root."""

    def __init__(self, root: Path) -> None:
        lines: list[str] = []
        for name in (".gitignore", ".vaultmemignore"):
            with contextlib.suppress(OSError):
                lines += (root / name).read_text(encoding="utf-8", errors="replace").splitlines()
        self._spec = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        self._prefixes: list[str] = []
        self._regexes: list[re.Pattern[str]] = []
        try:
            app = json.loads((root / ".obsidian" / "app.json").read_text(encoding="utf-8"))
            filters = app.get("userIgnoreFilters") or [] if isinstance(app, dict) else []
        except (OSError, ValueError):
            filters = []
        for item in filters if isinstance(filters, list) else []:
            if not isinstance(item, str) or not item:
                continue
            if len(item) > 2 and item.startswith("/") and item.endswith("/"):
                try:
                    self._regexes.append(re.compile(item[1:-1]))
                except re.error:
                    continue
            else:
                self._prefixes.append(item)

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """True when a '/'-separated vault-relative path is excluded."""
        if any(part.startswith(".") for part in rel.split("/")):
            return True
        if self._spec is not None and self._spec.match_file(rel + "/" if is_dir else rel):
            return True
        if any(rel.startswith(p) or (rel + "/").startswith(p) for p in self._prefixes):
            return True
        return any(rx.search(rel) for rx in self._regexes)


def is_memory_name(name: str) -> bool:
    return name.lower().endswith(".md") and not name.startswith(".")


def leads_to_a_note(root: Path, rel: str, problems: dict[str, str] | None = None) -> bool:
    """Whether the file at ``rel``, through whatever symlinks are on its way, is a note of the vault
    (``link_target``): not outside it, in a hidden folder or some other kind of file. When it is
    not, ``problems`` gets why, under ``rel``."""
    try:
        link_target(root, rel)
    except NotANote as exc:
        if problems is not None:
            problems[rel] = f"the path {exc}"
        return False
    except (OSError, ValueError):
        return False
    return True


def check_vault(root: Path) -> Path:
    """The vault root as an absolute path, or VaultUnavailable with a one-line reason."""
    advice = "check the vault path and its permissions"
    if not root.exists():
        raise VaultUnavailable(f"vault not found: {root} does not exist", advice=advice)
    if not root.is_dir():
        raise VaultUnavailable(f"vault is not a folder: {root} is a file", advice=advice)
    if not os.access(root, os.R_OK | os.X_OK):
        raise VaultUnavailable(f"vault cannot be read: permission denied on {root}", advice=advice)
    return on_disk_spelling(root.absolute())  # as the watchers will report it (docs/platforms.md)


def walk_vault(root: Path, rules: IgnoreRules | None = None,
               on_file: Callable[[str], None] | None = None) -> WalkResult:
    """Every memory file under ``root``, sorted. Never raises on the vault's contents."""
    rules = rules or IgnoreRules(root)
    result = WalkResult()
    real_root = os.path.realpath(root)
    seen_dirs: set[str] = {real_root}
    stack: list[str] = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))
        except OSError as exc:
            result.problems[rel_dir or "."] = f"folder cannot be listed: {exc.strerror or exc}"
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if rules.ignored(rel, is_dir=True):
                    continue
                if entry.is_symlink() or is_link(entry.path):
                    real = os.path.realpath(entry.path)
                    if real != real_root and not real.startswith(real_root + os.sep):
                        result.problems[rel] = "symlinked folder pointing outside the vault; not followed"
                        continue
                    if real in seen_dirs or real_root.startswith(real + os.sep):
                        result.problems[rel] = "symlinked folder already walked (a loop?); not followed"
                        continue
                    try:  # into .obsidian, .git, .trash...: what is there is not notes (docs/vault-format.md)
                        link_target(root, rel, note=False)
                    except NotANote as exc:
                        result.problems[rel] = f"the folder {exc}"
                        continue
                    seen_dirs.add(real)
                stack.append(rel)
            elif is_memory_name(entry.name) and not rules.ignored(rel):
                if entry.is_symlink() and not leads_to_a_note(root, rel, result.skipped_links):
                    continue
                result.files.append(rel)
                if on_file is not None:
                    on_file(rel)
    result.files.sort()
    return result
