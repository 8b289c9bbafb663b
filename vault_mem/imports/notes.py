"""Records into notes, idempotently: the one writer every importer goes through (docs/import.md).

    import_records(root, fmt, source, domain=None, dry_run=False, advance=None) -> Report

Each note is written as the write tools write one (``vault.writer``: frontmatter rendered by
``render_note`` and checked to read back equal, exclusive create, atomic replace) and carries
three keys that make a second run safe, all in the note itself so that they survive the
deletion of the index folder:

    imported_from   the format (``mcp-memory``, ``mem0``, ...)
    import_id       the source's own id for the record
    import_hash     a digest of what the import wrote (every frontmatter value but ``id`` and
                    ``import_hash``, and the body)

On a later run a record whose ``import_id`` is found is unchanged when the digest of what it
would write equals ``import_hash``; updated when the source changed and the note still digests
to ``import_hash``; a conflict, left alone, when the note no longer does (a person or an agent
edited it). A record is never created twice. Nothing here knows the index: the watcher or the
next reconcile indexes what was written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import secrets
import unicodedata
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput, WriteFailed
from vault_mem.imports.records import Merged, Record, Skipped, Source
from vault_mem.settings import Settings
from vault_mem.vault.dates import parse_datetime
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.paths import check_folder_names, check_relative, confine, existing_spelling, name_key
from vault_mem.vault.walk import walk_vault
from vault_mem.vault.writer import (
    _BIDI_CONTROLS,
    _WINDOWS_DEVICES,
    atomic_write,
    create_exclusive,
    note_filename,
    render_note,
)
from vault_mem.vault.writer import TRASH_DIRNAME as TRASH_NAME
from vault_mem.vault.yamlstyle import plain_value

IMPORTED_FROM, IMPORT_ID, IMPORT_HASH = "imported_from", "import_id", "import_hash"
_NOT_HASHED = ("id", IMPORT_HASH)


@dataclass
class Report:
    format: str
    dry_run: bool
    created: list[str] = field(default_factory=list)  # vault-relative paths
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    skipped: list[Skipped] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # what the notes do not hold, by design
    merged: list[Merged] = field(default_factory=list)  # entries that went into another entry's note
    records: int = 0  # the entries the source held: each one is counted once in ``counts``
    unit: str = "entries"
    parts: dict[str, tuple[int, int]] = field(default_factory=dict)  # {"observations": (in source, in notes)}

    def imported_nothing(self) -> bool:
        """No record became or matched a note (every one was skipped, or the source held none)."""
        return not (self.created or self.updated or self.unchanged or self.conflicts)

    def counts(self) -> dict[str, int]:
        """One count per outcome; they add up to ``records`` (``unaccounted`` says by how much not)."""
        return {"created": len(self.created), "updated": len(self.updated), "unchanged": self.unchanged,
                "conflicts": len(self.conflicts), "merged": len(self.merged), "skipped": len(self.skipped)}

    def unaccounted(self) -> int:
        """The entries of the source with no outcome: 0, or a fault of this program to report."""
        return self.records - sum(self.counts().values())


def digest(data: dict[str, Any], body: str) -> str:
    """What an import wrote, as a short digest: the frontmatter values as read and the body."""
    kept = {k: v for k, v in data.items() if k not in _NOT_HASHED}
    text = body.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    blob = json.dumps([kept, text], sort_keys=True, ensure_ascii=False, default=str)
    return "sha256-" + hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def parsed(text: str, config: Settings) -> tuple[dict[str, Any], str, bool]:
    """(frontmatter values, body, parsed?) of a note's text, as the reader splits it."""
    split = split_frontmatter(text.removeprefix("\ufeff"))
    if split.yaml_text is None:
        return {}, split.body, False
    loaded = load_yaml(split.yaml_text, config)
    return loaded.data, split.body, loaded.parsed


def expected_digest(fields: dict[str, Any], body: str, config: Settings) -> str:
    """The digest of the note ``fields`` and ``body`` render to, without rendering it: render_note
    refuses any value that would not read back the same (type included), so what is read back is
    ``plain_value`` of each field, and the body only gains LF endings and a final newline."""
    return digest({key: plain_value(value, config) for key, value in fields.items()}, body)


def rendered(fields: dict[str, Any], body: str, config: Settings, kept_hash: str | None = None) -> tuple[str, str]:
    """(the note's text with ``import_hash``, that hash). InvalidInput for a value YAML cannot hold.
    ``kept_hash``: the hash the note carried before it was exported, kept so that an edit made
    before the move is still a conflict for the next import of its first source."""
    text = render_note(fields, body, config=config)
    value = kept_hash or expected_digest(fields, body, config)
    end = text.index("\n---\n") + 1  # render_note's block: the first closing fence
    return text[:end] + f"{IMPORT_HASH}: {value}\n" + text[end:], value


def _read_head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


Identity = tuple[str, str]  # (imported_from, import_id)


def _identity(data: bytes, config: Settings) -> Identity | None:
    if b"import_id:" not in data:
        return None
    values, _, ok = parsed(data.decode("utf-8", "replace"), config)
    if ok and values.get(IMPORTED_FROM) is not None and values.get(IMPORT_ID) is not None:
        return str(values[IMPORTED_FROM]), str(values[IMPORT_ID])
    return None


def find_imported(root: Path, config: Settings) -> tuple[dict[Identity, list[str]], set[Identity]]:
    """({(imported_from, import_id): [paths of notes carrying it]}, those of notes in the trash).
    Every format's: a vault moved through export and import jsonl keeps its notes' first identity."""
    found: dict[Identity, list[str]] = {}
    for rel in walk_vault(root).files:
        data = _read_head(root / rel)
        identity = _identity(data, config) if data is not None else None
        if identity is not None:
            found.setdefault(identity, []).append(rel)
    trashed: set[Identity] = set()
    trash = root / TRASH_NAME
    if trash.is_dir() and not trash.is_symlink():
        for name in sorted(os.listdir(trash)):
            data = _read_head(trash / name) if name.lower().endswith(".md") else None
            identity = _identity(data, config) if data is not None else None
            if identity is not None:
                trashed.add(identity)
    return found, trashed


def portable_name(name: str) -> bool:
    """Whether a note's file name can be written as it is on Linux, macOS and Windows: at most 255
    bytes, no character Windows refuses (``< > : " / \\ | ? *``), no control or bidi character,
    no leading dot, no trailing dot or space, no name Windows reserves (``CON``, ``NUL``...)."""
    stem = name[:-3] if name.lower().endswith(".md") else name
    return (bool(stem.strip()) and len(name.encode("utf-8", "surrogatepass")) <= 255
            and not stem.startswith(".") and not stem.endswith((".", " ")) and not stem.startswith(" ")
            and not any(ch in '<>:"/\\|?*' or ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cs")
                        for ch in name)
            and stem.split(".")[0].rstrip(" ").upper() not in _WINDOWS_DEVICES)


def _note_id(created: Any) -> str:
    """An id as the write tools make one, dated by the source's own date."""
    moment = parse_datetime(created) or dt.datetime.now(dt.UTC)
    return f"{moment:%Y%m%d}-{secrets.token_hex(4)}"


def _folder(root: Path, domain: str, param: str) -> tuple[Path, str]:
    domain = existing_spelling(root, check_relative(domain.strip(), param)) if domain.strip() else ""
    check_folder_names(domain, param)
    return confine(root, domain, param), domain


def _names_in(folder: Path) -> set[str]:
    try:
        return {name_key(name) for name in os.listdir(folder)}
    except FileNotFoundError:
        return set()


class _Importer:
    def __init__(self, root: Path, fmt: str, domain: str | None, dry_run: bool,
                 default_domain: Callable[[Record], str], journal: Callable[[list[dict[str, Any]]], None] | None,
                 config: Settings) -> None:
        self.config = config
        self.root, self.fmt, self.domain, self.dry_run = root, fmt, domain, dry_run
        self.default_domain = default_domain
        self.journal = journal
        self.report = Report(fmt, dry_run)
        self.found, self.trashed = find_imported(root, config) if root.is_dir() else ({}, set())
        self.seen: dict[Identity, str] = {}
        # Listing a folder for each note would make an import of n notes into one folder O(n²).
        self.folders: dict[tuple[str, str], Path] = {}
        self.names: dict[Path, set[str]] = {}
        self.pool = ThreadPoolExecutor(max_workers=config.import_writers, thread_name_prefix="import")
        # (create, record, where, bytes, id, the folder it makes)
        self.pending: list[tuple[Future[Path], Record, str, bytes, str, str | None]] = []
        self.making: set[Path] = set()  # the folders this run's creates make
        self.changes: list[dict[str, Any]] = []  # written since the last journal call

    def identity(self, record: Record) -> Identity:
        return (record.origin[0], record.origin[1]) if record.origin else (self.fmt, record.source_id)

    def folder(self, domain: str, param: str) -> Path:
        key = (domain, param)
        if key not in self.folders:
            self.folders[key] = _folder(self.root, domain, param)[0]
        return self.folders[key]

    def fields(self, record: Record) -> dict[str, Any]:
        fields = {"title": record.title, **{k: v for k, v in record.fields.items() if v not in (None, [], {})}}
        fields.setdefault("agent", f"import-{self.fmt}")
        fields[IMPORTED_FROM], fields[IMPORT_ID] = self.identity(record)
        return fields

    def one(self, record: Record) -> None:
        where = record.where or f"record {record.source_id!r}"
        if record.raw is not None:
            self.restore(record, where)
            return
        identity = self.identity(record)
        if identity in self.seen:
            self.report.skipped.append(Skipped(where, f"the id {identity[1]!r} came already at "
                                               f"{self.seen[identity]}; the first was kept"))
            return
        self.seen[identity] = where
        paths = self.found.get(identity, [])
        earlier = next((self.found[alt] for alt in record.also if self.found.get(alt)), [])
        paths = paths or earlier
        if len(paths) > 1:
            why = f"{len(paths)} notes carry import_id {record.source_id!r} ({', '.join(paths[:3])}); keep one"
            self.report.conflicts.append((paths[0], why))
        elif paths:
            self.update(paths[0], record)
        elif identity in self.trashed or any(alt in self.trashed for alt in record.also):
            self.report.skipped.append(Skipped(where, f"deleted since the last import (it is in {TRASH_NAME}/); "
                                               "restore it, or empty the trash to import it again"))
        else:
            self.create(record, where)

    def target(self, record: Record) -> tuple[Path, str]:
        """(the folder, the file name) a new note of ``record`` goes to; InvalidInput when refused."""
        if record.path is not None and (self.domain is None or (record.tree and record.raw is not None)):
            rel = check_relative(record.path, "path")
            folder_rel, _, name = rel.rpartition("/")
            if not name.lower().endswith(".md"):
                raise InvalidInput("path", f"{rel!r} is not a Markdown file name (.md)")
            if self.domain is not None:  # a bundle's tree, below --domain
                folder_rel = "/".join(part for part in (self.domain.strip().strip("/"), folder_rel) if part)
            # The name a write tool would give a note titled so: no ': | ? * < >', no CON, at most
            # MAX_NAME_BYTES; a name that is already clean is kept as it is, and so is a restored
            # file's name that every system can hold (a '#' or '.excalidraw' in it included).
            kept = record.raw is not None and portable_name(name)
            return self.folder(folder_rel, "path"), name if kept else note_filename(name[:-3], self.config)
        if record.raw is not None and self.domain is not None:
            name = record.path.rpartition("/")[2] if record.path else ""
            return self.folder(self.domain, "domain"), note_filename(
                name[:-3] if name.lower().endswith(".md") else record.title, self.config)
        domain = self.domain if self.domain is not None else (
            record.domain if record.domain is not None else self.default_domain(record))
        return self.folder(domain, "domain"), note_filename(record.title, self.config)

    def create(self, record: Record, where: str) -> None:
        fields = {"id": record.uid or _note_id(record.fields.get("created")), **self.fields(record)}
        try:
            text, _ = rendered(fields, record.body, self.config, record.origin[2] if record.origin else None)
            folder, name = self.target(record)
        except InvalidInput as exc:
            self.report.skipped.append(Skipped(where, exc.message))
            return
        self.submit(folder, name, text.encode("utf-8"), record, where, str(fields["id"]))

    def restore(self, record: Record, where: str) -> None:
        """A file of an export, written back byte for byte where it was: unchanged when the same
        bytes are there already, a conflict when other bytes (or a name differing only in case) are."""
        assert record.raw is not None
        try:
            folder, name = self.target(record)
        except InvalidInput as exc:
            self.report.skipped.append(Skipped(where, exc.message))
            return
        rel = (folder / name).relative_to(self.root).as_posix()
        identity = ("file", name_key(rel))
        if identity in self.seen:
            self.report.skipped.append(Skipped(where, f"the path {rel!r} came already at {self.seen[identity]}; "
                                               "the first was kept"))
            return
        self.seen[identity] = where
        names = self.listed(folder)
        if name_key(name) in names:
            try:
                there = (folder / name).read_bytes()
            except FileNotFoundError:
                self.report.conflicts.append((rel, "a file whose name differs only in case is already in its "
                                              "folder; left as it is"))
                return
            except OSError as exc:
                self.report.conflicts.append((rel, f"a file is already there and cannot be read ({exc}); left "
                                              "as it is"))
                return
            if there == record.raw:
                self.report.unchanged += 1
            else:
                self.report.conflicts.append((rel, "a different file is already there; left as it is (move it "
                                              "away to restore the exported one)"))
            return
        self.submit(folder, name, record.raw, record, where, record.uid or "")

    def listed(self, folder: Path) -> set[str]:
        names = self.names.get(folder)
        if names is None:  # not setdefault: its default would list the folder for every note
            names = self.names[folder] = _names_in(folder)
        return names

    def submit(self, folder: Path, name: str, data: bytes, record: Record, where: str, uid: str) -> None:
        if self.dry_run:
            self.report.created.append((folder / name).relative_to(self.root).as_posix())
            return
        names = self.listed(folder)
        made = self.made_by_this(folder)
        # Each create fsyncs its file and folder as a write tool's does; several at once let the file
        # system commit them together (10,000 notes one after the other wait on 20,000 commits).
        created = self.pool.submit(create_exclusive, folder, name, data, taken=names, within=self.root,
                                   config=self.config)
        self.pending.append((created, record, where, data, uid, made))

    def made_by_this(self, folder: Path) -> str | None:
        """The outermost folder above the note that does not exist yet (vault-relative), when no
        earlier create of this run makes it: the create that makes it journals it, so that an undo
        removes it again once it is empty (docs/import.md)."""
        outermost = None
        current = folder
        while current not in (self.root, current.parent) and current not in self.making and not current.exists():
            outermost = current
            current = current.parent
        if outermost is None:
            return None
        walk = folder
        while walk != outermost.parent:
            self.making.add(walk)
            walk = walk.parent
        return outermost.relative_to(self.root).as_posix()

    def finish(self, advance: Callable[[int], None] | None) -> None:
        """Wait for the creates in flight, in record order (one the disk refused is skipped, named
        with the reason), then journal what this batch wrote."""
        for future, record, where, data, uid, made in self.pending:
            try:
                final = future.result()
            except WriteFailed as exc:
                self.report.skipped.append(Skipped(where, f"not written: {exc.message}"))
            else:
                if record.mtime_ns is not None:  # a restored file keeps its time, which dates a note without dates
                    with contextlib.suppress(OSError, OverflowError, ValueError):
                        os.utime(final, ns=(record.mtime_ns, record.mtime_ns))
                rel = final.relative_to(self.root).as_posix()
                self.report.created.append(rel)
                self.changes.append({"path": rel, "fsrel": rel, "title": record.title, "uid": uid,
                                     "before": None, "after": data, **({"made": made} if made else {})})
            if advance is not None:
                advance(1)
        self.pending.clear()
        if self.changes and self.journal is not None:
            self.journal(self.changes)
        self.changes = []

    def update(self, rel: str, record: Record) -> None:
        path = self.root / rel
        try:
            before = path.read_bytes()
            text = before.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.report.conflicts.append((rel, f"cannot be read as UTF-8 ({exc}); left as it is"))
            return
        data, body, ok = parsed(text, self.config)
        if not ok:
            self.report.conflicts.append((rel, "its frontmatter no longer parses; fix it by hand"))
            return
        fields = {"id": data.get("id") or _note_id(record.fields.get("created")), **self.fields(record)}
        stored = data.get(IMPORT_HASH)
        current = digest(data, body)
        if not record.dated:
            # Dates that are only the source file's time say nothing about this record: the note keeps
            # its own unless the record changed, and then ``updated`` moves to the file's time.
            kept: dict[str, Any] = {key: data[key] for key in ("created", "updated") if key in data}
            if expected_digest({**fields, **kept}, record.body, self.config) in (stored, current):
                self.report.unchanged += 1
                return
            if "created" in data:
                fields["created"] = data["created"]
        if expected_digest(fields, record.body, self.config) in (stored, current):
            self.report.unchanged += 1
            return
        if current != stored:
            self.report.conflicts.append((rel, "edited since the last import; left as it is (delete "
                                          "import_hash from it to let the next import overwrite it)"))
            return
        try:
            new_text, _ = rendered(fields, record.body, self.config)
        except InvalidInput as exc:
            self.report.skipped.append(Skipped(record.where or rel, exc.message))
            return
        if not self.dry_run:
            if path.read_bytes() != before:
                self.report.conflicts.append((rel, "changed while it was being imported; left as it is"))
                return
            new_bytes = new_text.encode("utf-8")
            try:
                atomic_write(path, new_bytes, within=self.root, config=self.config)
            except WriteFailed as exc:
                self.report.skipped.append(Skipped(record.where or rel, f"not written: {exc.message}"))
                return
            self.changes.append({"path": rel, "fsrel": rel, "title": record.title, "uid": str(fields["id"]),
                                 "before": before, "after": new_bytes})
        self.report.updated.append(rel)


def import_records(root: Path, fmt: str, source: Source, domain: str | None = None, dry_run: bool = False,
                   default_domain: Callable[[Record], str] = lambda record: "",
                   advance: Callable[[int], None] | None = None,
                   journal: Callable[[list[dict[str, Any]]], None] | None = None, *, config: Settings) -> Report:
    """Write ``source``'s records as notes under ``root`` (nothing with ``dry_run``, when ``root``
    need not exist); see the module.

    ``domain`` puts every note in that folder; else a record's own domain, else
    ``default_domain(record)``. Raises InvalidInput for a bad ``domain``. A record that cannot
    be written (a bad path, a refused write) is skipped with its reason; the rest go on.
    ``journal(changes)`` is called after each batch with what it wrote (path, fsrel, title, uid,
    before and after bytes), so that an import can be logged and undone as one agent's changes.
    ``config``: the ``import_*`` settings (how many files are written at once, and per batch).
    """
    if domain is not None:
        _folder(root, domain, "--domain")
    importer = _Importer(root, fmt, domain, dry_run, default_domain, journal, config)
    importer.report.skipped.extend(source.skipped)
    importer.report.left_out.update(source.left_out)
    importer.report.merged.extend(source.merged)
    importer.report.records, importer.report.unit = source.held, source.unit
    importer.report.parts.update(source.parts)
    try:
        for record in source.records:
            queued = len(importer.pending)
            importer.one(record)
            if len(importer.pending) == queued and advance is not None:
                advance(1)  # decided at once; a create counts when its file is written
            if len(importer.pending) >= config.import_batch:
                importer.finish(advance)
        importer.finish(advance)
    finally:
        importer.pool.shutdown(wait=True, cancel_futures=True)
    return importer.report
