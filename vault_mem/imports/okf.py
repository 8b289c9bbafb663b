"""Open Knowledge Format bundles, out and in: ``vault-mem export --format okf`` and ``import okf``.

OKF (GoogleCloudPlatform/knowledge-catalog, ``okf/SPEC.md``, version 0.2 as of commit e7945417,
2026-08-22) is a folder of Markdown files with YAML frontmatter, shipped as it is or zipped: each
``.md`` file but the reserved ``index.md`` and ``log.md`` is a concept, whose frontmatter needs a
non-empty ``type``; ``title``, ``description``, ``tags``, ``generated: {by, at}`` and any other key
are optional. A bundle-root ``index.md`` may declare ``okf_version``. markdown-vault-mcp zips a
vault so (``okf_bundle.py``); Basic Memory reads such bundles' Markdown links as relations.

Export (``bundle(root)``): every note's file as it is, at its path, but for what OKF needs
(docs/import.md): a note without ``type`` gets one line, ``type: <its type>  # vault-mem: ...``,
after the opening ``---`` (a note without frontmatter gets a block of that one line); a note named
``index.md`` or ``log.md`` takes another name; the root ``index.md`` lists every concept. The
manifest ``vault-mem.json`` (not Markdown, so no concept) records each note's path, added line and
modification time, so that ``import okf`` of the bundle gives back the same files byte for byte.

Import (``read(source)``): a concept is a Markdown file a vault reads as it is; each is restored
at its path in the bundle (``--domain`` puts the tree below a folder), byte for byte, dated (its
file's time) by ``generated.at`` or v0.1's ``timestamp`` when it has one. Reserved and non-Markdown
files are counted as left out. Reading never writes; the bundle is read whole first.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re
import secrets
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from vault_mem.errors import InvalidInput, WriteFailed
from vault_mem.imports.archives import is_zip, member, open_zip
from vault_mem.imports.records import Record, Skipped, Source, source_moment
from vault_mem.settings import Settings
from vault_mem.vault.dates import parse_datetime
from vault_mem.vault.fields import fold
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.markdown import mask_code, parse_wikilink
from vault_mem.vault.note import Note
from vault_mem.vault.reader import read_note, read_whole
from vault_mem.vault.walk import walk_vault
from vault_mem.vault.writer import atomic_write

FORMAT = "okf"
DEFAULT_DOMAIN = ""
OKF_VERSION = "0.2"
MANIFEST = "vault-mem.json"
MANIFEST_KIND = "vault-mem okf bundle"
RESERVED = ("index.md", "log.md")
ADDED = "  # vault-mem: added for OKF, which needs a type"
ACCEPTED = "an OKF bundle: a folder of Markdown files with YAML frontmatter, or a zip of one"
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")  # as vault.markdown reads them
_NO_DATE = zipfile.ZipInfo().date_time  # a zip entry's time when its writer gave none (markdown-vault-mcp's)


# -- export ---------------------------------------------------------------------------------

Edit = tuple[int, str, str]  # (where, in characters of the note's text; what was there; what is there now)


@dataclass
class Bundle:
    """What an export writes: {bundle path: (bytes, mtime_ns or None)}, and what it says."""

    files: dict[str, tuple[bytes, int | None]] = field(default_factory=dict)
    notes: int = 0
    typed: int = 0  # notes that got a type line
    links: int = 0  # wikilinks written as Markdown links
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (vault path, concept path)
    not_conformant: list[str] = field(default_factory=list)  # frontmatter that does not parse, not UTF-8


def _type_edit(text: str, note_type: str, config: Settings) -> Edit | None:
    """The line that gives a note without ``type`` one; None when its frontmatter has one, or does
    not parse (then the note is exported as it is, not conformant)."""
    start = 1 if text.startswith("\ufeff") else 0
    split = split_frontmatter(text[start:])
    if split.yaml_text is None:
        return 0, "", f"---\ntype: {json.dumps(note_type)}{ADDED}\n---\n"
    loaded = load_yaml(split.yaml_text, config)
    value = loaded.data.get("type")
    if not loaded.parsed or (isinstance(value, str) and value.strip()):
        return None
    first_end = text.index("\n", start) + 1
    newline = "\r\n" if text[first_end - 2:first_end] == "\r\n" else "\n"
    return first_end, "", f"type: {json.dumps(note_type)}{ADDED}{newline}"


def _conformant(text: str, config: Settings) -> bool:
    split = split_frontmatter(text.removeprefix("\ufeff"))
    loaded = load_yaml(split.yaml_text, config) if split.yaml_text is not None else None
    value = loaded.data.get("type") if loaded is not None and loaded.parsed else None
    return isinstance(value, str) and bool(value.strip())


class _Names:
    """Which concept a wikilink names: only one that no other note could be taken for, by path,
    file name, title or alias (as vault-mem resolves them), so the Markdown link means the same."""

    def __init__(self) -> None:
        self.keys: dict[str, set[str]] = {}

    def add(self, rel: str, concept: str, title: str, aliases: list[str]) -> None:
        stem = rel[:-3]
        for key in {stem, rel, stem.rpartition("/")[2], title, *aliases}:
            self.keys.setdefault(fold(key.strip()), set()).add(concept)

    def concept(self, target: str) -> str | None:
        found = self.keys.get(fold(target.strip().lstrip("/")), set())
        return next(iter(found)) if len(found) == 1 else None


def _link_edits(text: str, names: _Names) -> list[Edit]:
    """Each wikilink of the body that names one concept, as a root-absolute Markdown link (OKF's
    recommended form, and markdown-vault-mcp's); embeds, block links, links in code, and links
    that name no concept or several stay as written."""
    start = 1 if text.startswith("\ufeff") else 0
    split = split_frontmatter(text[start:])
    offset = start + split.body_offset
    edits: list[Edit] = []
    for m in _WIKILINK.finditer(mask_code(split.body)):
        if m.group(1):
            continue
        link = parse_wikilink(split.body[m.start(2):m.end(2)])
        concept = names.concept(link.target) if link.target and not link.block else None
        if concept is None:
            continue
        display = link.alias.strip() if link.alias and link.alias.strip() else link.target
        fragment = f"#{link.heading}" if link.heading else ""
        edits.append((offset + m.start(), split.body[m.start():m.end()],
                      f"[{_escape(display)}]({_link(concept, fragment)})"))
    return edits


def _apply(text: str, edits: list[Edit]) -> tuple[str, list[dict[str, Any]]]:
    """The text with ``edits`` made, and each as the manifest keeps it: where it is in the new text."""
    parts: list[str] = []
    kept: list[dict[str, Any]] = []
    done, grown = 0, 0
    for at, was, now in sorted(edits):
        parts += [text[done:at], now]
        kept.append({"at": at + grown, "was": was, "now": now})
        done, grown = at + len(was), grown + len(now) - len(was)
    return "".join(parts) + text[done:], kept


def undo_edits(data: bytes, edits: Any) -> bytes:
    """The concept's bytes with an export's ``edits`` taken back, last first; an edit whose text is
    no longer where it was (the concept was changed since) is left as it is."""
    if not isinstance(edits, list) or not edits:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    valid = [(e["at"], e["was"], e["now"]) for e in edits
             if isinstance(e, dict) and isinstance(e.get("at"), int) and not isinstance(e["at"], bool)
             and e["at"] >= 0 and isinstance(e.get("was"), str) and isinstance(e.get("now"), str)]
    for at, was, now in sorted(valid, reverse=True):
        if text[at:at + len(now)] == now:
            text = text[:at] + was + text[at + len(now):]
    return text.encode("utf-8")


def _concept_path(rel: str, taken: set[str]) -> str:
    """``rel``, or another name when OKF reserves its name (``index.md``, ``log.md``)."""
    folder, _, name = rel.rpartition("/")
    if name.lower() not in RESERVED:
        return rel
    stem = name[:-3]
    n = 0
    while True:
        candidate = f"{stem} (note{f' {n}' if n else ''}).md"
        path = f"{folder}/{candidate}" if folder else candidate
        if path.lower() not in taken:
            return path
        n += 1


def _link(path: str, fragment: str = "") -> str:
    """A root-absolute link destination, in angle brackets (spaces allowed), percent-encoding what
    would end it or that vault-mem's reader would not take in a path."""
    def quoted(text: str) -> str:
        return "".join(f"%{ord(ch):02X}" if ch in "%<>()[]\n\r" else ch for ch in text)
    return "</" + quoted(path) + (("#" + quoted(fragment[1:])) if fragment else "") + ">"


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in "[]\\*_`<>" else ch for ch in " ".join(text.split()))


def _index(title: str, entries: list[tuple[str, str, str]]) -> bytes:
    """The bundle-root ``index.md``: ``okf_version``, then each folder's concepts as links."""
    lines = ["---", f'okf_version: "{OKF_VERSION}"', "---", "", f"# {_escape(title)}", ""]
    folder: str | None = None
    for path, name, description in entries:
        here = path.rpartition("/")[0]
        if here != folder:
            folder = here
            lines += ([""] if lines[-1] else []) + [f"## {_escape(here) if here else 'Top'}", ""]
        lines.append(f"* [{_escape(name)}]({_link(path)})" + (f" - {_escape(description)}" if description else ""))
    return ("\n".join(lines) + "\n").encode("utf-8")


def bundle(root: Path, config: Settings, seen: set[str] | None = None) -> Bundle:
    """Every note of the vault as an OKF bundle (nothing is written); each note's path goes into
    ``seen``, as ``export.export_lines`` does, so that the caller can name what was left out."""
    out = Bundle()
    rels = walk_vault(root).files
    taken = {rel.lower() for rel in rels} | {name for name in RESERVED} | {MANIFEST.lower()}
    names = _Names()
    found: list[tuple[str, str, bytes, Note]] = []
    for rel in rels:
        if seen is not None:
            seen.add(rel)
        try:
            data = read_whole(root / rel, config)
        except OSError:
            continue  # gone or unreadable since the walk: the caller names what was not exported
        note = read_note(root, rel, config=config)
        concept = _concept_path(rel, taken)
        taken.add(concept.lower())
        if concept != rel:
            out.renamed.append((rel, concept))
        names.add(rel, concept, note.title, list(note.aliases))
        found.append((rel, concept, data, note))
    entries: list[tuple[str, str, str]] = []
    manifest: list[dict[str, Any]] = []
    for rel, concept, data, note in found:
        entry: dict[str, Any] = {"concept": concept, "path": rel, "mtime_ns": note.mtime_ns}
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            typed = _type_edit(text, note.type or "note", config)
            edits = [typed] if typed else []
            links = [] if note.excalidraw else _link_edits(text, names)
            changed, kept = _apply(text, edits + links)
            if _conformant(changed, config):
                data = changed.encode("utf-8")
                out.typed += bool(typed)
                out.links += len(links)
                if kept:
                    entry["edits"] = kept
            else:
                text = None
        if text is None:
            out.not_conformant.append(rel)
        out.files[concept] = (data, note.mtime_ns or None)
        manifest.append(entry)
        out.notes += 1
        description = note.metadata.get("description") if isinstance(note.metadata, dict) else None
        entries.append((concept, note.title, description if isinstance(description, str) else ""))
    entries.sort(key=lambda e: (e[0].rpartition("/")[0].lower(), e[0].lower()))
    out.files["index.md"] = (_index(root.name or "vault", entries), None)
    body = {"format": MANIFEST_KIND, "version": 1, "okf_version": OKF_VERSION, "notes": manifest}
    out.files[MANIFEST] = ((json.dumps(body, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), None)
    return out


def _zip_bytes(files: dict[str, tuple[bytes, int | None]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, (data, mtime_ns) in sorted(files.items()):
            when = dt.datetime.fromtimestamp(mtime_ns / 1e9) if mtime_ns else None
            stamp = when.timetuple()[:6] if when and when.year >= 1980 else _NO_DATE
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buffer.getvalue()


def write_bundle(files: dict[str, tuple[bytes, int | None]], output: Path, config: Settings) -> None:
    """Write ``files`` to ``output``: a zip (atomically) when its name ends in ``.zip``, else a new
    folder (or an empty one), whole or not at all: filled under a hidden name beside it, then
    renamed into place. InvalidInput for an ``output`` that holds anything; WriteFailed when the
    disk refuses."""
    if output.suffix.lower() == ".zip":
        if output.is_dir():
            raise InvalidInput("--output", f"{output} is a folder; give a new file name ending in .zip")
        atomic_write(output, _zip_bytes(files), config=config)
        return
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise InvalidInput("--output", f"{output} already exists and is not an empty folder; give a new folder "
                           "(or FILE.zip): an export never writes over other files")
    parent = output.absolute().parent
    if not parent.is_dir():
        raise InvalidInput("--output", f"{parent} does not exist; make it first, or give another place")
    partial = parent / f".{output.name}.partial-{secrets.token_hex(4)}"
    try:
        for path, (data, mtime_ns) in files.items():
            target = partial.joinpath(*path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if mtime_ns:
                with contextlib.suppress(OSError, OverflowError, ValueError):
                    os.utime(target, ns=(mtime_ns, mtime_ns))
        if output.is_dir():
            output.rmdir()  # empty, checked above
        os.replace(partial, output)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise WriteFailed(f"the bundle could not be written to {output}: {exc.strerror or exc}; nothing was "
                          "left there") from exc


# -- import ---------------------------------------------------------------------------------

@dataclass
class _Entry:
    path: str  # inside the bundle, "/" separated, no leading "./"
    data: bytes
    mtime_ns: int | None


def _ns(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


HIDDEN = "hidden files and folders (a name starting with '.', __MACOSX)"
LINKS = "symbolic links (a bundle folder's links are not followed)"


def _folder_entries(source: Path, left: dict[str, int], config: Settings) -> list[_Entry]:
    """Every visible file of a bundle folder. A hidden name (``.git``, ``.obsidian``) and a
    symbolic link are not read; each is counted in ``left`` (a hidden folder once)."""
    out: list[_Entry] = []
    for folder, dirs, names in os.walk(source):
        kept = []
        for name in sorted(dirs):
            if name.startswith("."):
                left[HIDDEN] = left.get(HIDDEN, 0) + 1
            elif os.path.islink(os.path.join(folder, name)):
                left[LINKS] = left.get(LINKS, 0) + 1
            else:
                kept.append(name)
        dirs[:] = kept
        rel_dir = os.path.relpath(folder, source).replace(os.sep, "/")
        for name in sorted(names):
            full = os.path.join(folder, name)
            if name.startswith(".") or os.path.islink(full):
                key = HIDDEN if name.startswith(".") else LINKS
                left[key] = left.get(key, 0) + 1
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            try:
                data = read_whole(Path(full), config)
                mtime = os.stat(full).st_mtime_ns
            except OSError as exc:
                raise InvalidInput("SOURCE", f"{full} cannot be read: {exc.strerror or exc}") from None
            out.append(_Entry(rel, data, mtime))
    return out


def _zip_entries(source: Path, left: dict[str, int], limit: int) -> list[_Entry]:
    """Every file of a bundle zip. A hidden entry is counted in ``left``; a name that would leave
    the bundle (``../x.md``) is kept, for the import to refuse and name."""
    out: list[_Entry] = []
    with open_zip(source) as zf:
        infos = [info for info in zf.infolist() if not info.is_dir()]
        names = [info.filename.replace("\\", "/").lstrip("/") for info in infos]
        # A zip of the bundle's folder (``zip -r b.zip bundle/``) holds it under one top folder.
        tops = {name.split("/", 1)[0] for name in names}
        strip = len(tops) == 1 and all("/" in name for name in names) and ".." not in tops
        for info, name in zip(infos, names, strict=True):
            rel = name.split("/", 1)[1] if strip else name
            parts = rel.split("/")
            if rel.startswith("__MACOSX/") or any(p.startswith(".") and p != ".." for p in parts):
                left[HIDDEN] = left.get(HIDDEN, 0) + 1
                continue
            when = None if info.date_time <= _NO_DATE else _ns(dt.datetime(*info.date_time))
            out.append(_Entry(rel, member(zf, info, source, limit), when))
    return out


def _manifest(entries: dict[str, _Entry], source: Path) -> dict[str, dict[str, Any]]:
    """{concept path: its manifest entry} of a bundle vault-mem wrote; {} for any other bundle."""
    found = entries.get(MANIFEST)
    if found is None:
        return {}
    try:
        data = json.loads(found.data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInput("SOURCE", f"{MANIFEST} in {source} is not valid JSON ({exc}); it is the list "
                           "'vault-mem export --format okf' writes to restore the notes exactly. Delete it to "
                           "import the bundle's files as they are") from None
    notes = data.get("notes") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_KIND or not isinstance(notes, list):
        raise InvalidInput("SOURCE", f"{MANIFEST} in {source} is not the list 'vault-mem export --format okf' "
                           "writes (format, notes); delete it to import the bundle's files as they are")
    return {str(n["concept"]): n for n in notes if isinstance(n, dict) and isinstance(n.get("concept"), str)}


def _dated(data: bytes, config: Settings) -> int | None:
    """The concept's own date as a file time: ``generated.at``, else v0.1's ``timestamp``."""
    try:
        split = split_frontmatter(data.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError:
        return None
    values = load_yaml(split.yaml_text, config).data if split.yaml_text else {}
    generated = values.get("generated")
    for value in (generated.get("at") if isinstance(generated, dict) else None, values.get("timestamp")):
        moment = parse_datetime(value) if isinstance(value, str | dt.datetime | dt.date) else None
        if moment is not None:
            return _ns(moment)
    return None


def _restored(entry: _Entry, where: str, listed: dict[str, Any] | None, fallback: int | None,
              config: Settings) -> Record | Skipped:
    data, path, mtime = entry.data, entry.path, None
    if listed is not None:
        data = undo_edits(data, listed.get("edits"))
        if isinstance(listed.get("path"), str):
            path = listed["path"]
        if isinstance(listed.get("mtime_ns"), int) and not isinstance(listed["mtime_ns"], bool):
            mtime = listed["mtime_ns"] if listed["mtime_ns"] > 0 else None
    else:
        mtime = _dated(data, config) or entry.mtime_ns or fallback
    title = PurePosixPath(path).stem or "Untitled"
    return Record(source_id=path, title=title, body="", fields={}, path=path, where=where, raw=data,
                  mtime_ns=mtime, tree=True)


def read(source: Path, config: Settings) -> Source:
    left: dict[str, int] = {}
    if is_zip(source):
        listing = _zip_entries(source, left, config.import_unpacked_bytes)
    elif source.is_dir():
        listing = _folder_entries(source, left, config)
    elif source.exists():
        raise InvalidInput("SOURCE", f"{source} is neither a folder nor a zip; expected {ACCEPTED}")
    else:
        raise InvalidInput("SOURCE", f"{source} does not exist; pass the bundle's folder or zip")
    entries = {entry.path: entry for entry in listing}
    manifest = _manifest(entries, source)
    concepts = [e for e in listing
                if e.path.lower().endswith(".md") and e.path.rpartition("/")[2].lower() not in RESERVED]
    if not concepts:
        raise InvalidInput("SOURCE", f"{source} holds no Markdown concept (no .md file but index.md and log.md); "
                           f"expected {ACCEPTED}")
    out = Source(held=len(concepts), unit="concepts")
    for what, count in left.items():
        out.leave(what, count)
    try:
        fallback: int | None = int(dt.datetime.fromisoformat(source_moment(source)).timestamp()) * 1_000_000_000
    except ValueError:
        fallback = None
    for number, entry in enumerate(concepts, start=1):
        out.add(_restored(entry, entry.path or f"concept {number}", manifest.get(entry.path), fallback, config))
    reserved = sum(1 for e in listing if e.path.rpartition("/")[2].lower() in RESERVED)
    out.leave("index.md and log.md files (OKF's navigation and history, no concepts)", reserved)
    others = [e.path for e in listing if not e.path.lower().endswith(".md") and e.path != MANIFEST]
    out.leave("files that are not Markdown (" + ", ".join(others[:3]) + (", ..." if len(others) > 3 else "") + ")",
              len(others))
    missing = [n for n in manifest if n not in entries]
    for name in missing:
        out.held += 1
        out.skipped.append(Skipped(name, f"listed in {MANIFEST} but not in the bundle"))
    return out
