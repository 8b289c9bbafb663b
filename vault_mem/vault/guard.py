"""A guard against indexing a folder that is very unlikely to be the vault a person meant.

``vault-mem index --vault /`` (a slip of the keyboard) would read every Markdown file on the
machine and write a large index into it. Before a first build, such a folder needs ``--yes``.
"""

from __future__ import annotations

import os
from pathlib import Path


def unlikely_vault(root: Path, many_files: int) -> str | None:
    """Why ``root`` does not look like a vault (the file-system root, the home folder, or more
    than ``many_files`` Markdown files and no ``.obsidian`` folder), or None when it does."""
    resolved = root.resolve()
    if resolved == Path(resolved.anchor):
        return f"{root} is the root of the file system"
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError, OSError):  # no home folder known
        home = None
    if resolved == home:
        return f"{root} is your home folder"
    if (root / ".obsidian").is_dir():
        return None
    if count_markdown(root, many_files) > many_files:
        return f"{root} holds more than {many_files:,} Markdown files and no .obsidian folder"
    return None


def count_markdown(root: Path, stop_after: int) -> int:
    """Markdown files under ``root`` outside hidden folders, counted up to ``stop_after + 1``."""
    found = 0
    stack = [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
            except OSError:
                continue
            if entry.name.lower().endswith(".md"):
                found += 1
                if found > stop_after:
                    return found
    return found
