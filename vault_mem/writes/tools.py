"""The write tools (docs/tools.md): memory_write, memory_edit, task_close, memory_supersede,
memory_delete.

Each writes atomically (vault.writer), stays inside the vault (vault.paths), and indexes
the file it wrote before answering, so every read tool sees the change when the call
returns; the watcher's later event for that file finds the index already equal (one stat,
no second indexing pass). Answers: ``{status, uid, permalink, path, updated, etag}``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
import os
import secrets
import threading
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vault_mem.errors import Conflict, IndexBusy, InvalidInput, NotFound, VaultMemError, WriteFailed
from vault_mem.git.commit import write_commit
from vault_mem.search.api import VaultIndex, resembling
from vault_mem.served.agents import check_agent_name
from vault_mem.served.context import View
from vault_mem.served.params import (
    AGENT,
    IF_ETAG,
    REF,
    Args,
    choice_param,
    mapping_param,
    number_param,
    strings_param,
    text_param,
)
from vault_mem.served.refs import resolve_ref
from vault_mem.settings import Settings
from vault_mem.vault.dates import iso, parse_datetime
from vault_mem.vault.fields import FIELD, normalize_tags
from vault_mem.vault.note import SCOPES, Note
from vault_mem.vault.paths import check_folder_names, check_relative, confine, existing_spelling, note_file
from vault_mem.vault.reader import DateSource, file_etag, read_note, read_whole
from vault_mem.vault.writer import (
    append_paragraph,
    atomic_write,
    create_exclusive,
    decode_for_edit,
    move_to_trash,
    note_filename,
    render_note,
    replace_body,
    set_keys,
)
from vault_mem.writes.landing import change, journal_and_track, keep_persist_error
from vault_mem.writes.limits import check_effects, check_free_name

log = logging.getLogger("vault_mem.writes")
WRITE_PARAMS = (
    AGENT,
    text_param("title", "Title; also the file name.", required=True),
    text_param("content", "The Markdown body.", required=True),
    text_param("domain", "Folder like 'acme/x100'; '' is the root.", default=""),
    text_param("type", "note, fact, lesson, gotcha, decision, task, ...", default="note"),
    strings_param("tags", "Tags."),
    number_param("importance", "How much it matters.", default=0.5, minimum=0, maximum=1),
    text_param("namespace", "Any name.", default="default"),
    choice_param("scope", "Who it is for.", SCOPES, default="user"),
    text_param("project", "Project, for project scopes."),
    strings_param("paths", "Code paths it is about."),
    strings_param("to", "Agents to hand it to."),
)
SUPERSEDE_PARAMS = (
    AGENT, REF,
    text_param("title", "Title of the new memory.", required=True),
    text_param("content", "Its body.", required=True),
    text_param("type", "Type; default the old one's."),
    strings_param("tags", "Tags; default the old one's."),
    text_param("domain", "Folder; default the old one's."),
)
EDIT_PARAMS = (
    AGENT, REF, IF_ETAG,
    text_param("if_updated", "The updated value you read."),
    text_param("content", "New body."),
    text_param("append", "A paragraph to add at the end."),
    mapping_param("set", "Frontmatter keys to write."),
    strings_param("to", "Agents to hand it to."),
)
CLOSED_STATES = ("completed", "cancelled")
CLOSE_PARAMS = (AGENT, REF, choice_param("state", "How it ended.", CLOSED_STATES, default="completed"), IF_ETAG)
DELETE_PARAMS = (AGENT, REF, IF_ETAG)


# Writes of one note take turns in this process: each reads the file, checks it, writes it and
# submits it to the index, and two threads interleaving those steps on one note would lose an
# update. Writes of different notes run side by side: their file steps are mostly waits (fsync,
# the journal's and the agent's file locks), and run one at a time they bounded a busy server's
# saves (docs/concurrency.md). A note's turn is one of ``NOTE_TURNS`` locks, picked by the file
# its path leads to (symlinks followed: a folder linked inside the vault shows its notes twice;
# case and Unicode form folded, as a case-insensitive disk would); a thread holds at most one,
# so two writes can never wait for each other's. Another process or an editor can still change
# the file in between: ``if_etag`` and the re-read in ``_rewrite`` catch that.
NOTE_TURNS = 64
_NOTE_TURNS = tuple(threading.Lock() for _ in range(NOTE_TURNS))
# With ``serve --git-commit`` the file steps and each git commit stay one at a time instead: a
# commit takes every change git sees, so two writes under way would share one.
_GIT_TURN = threading.Lock()
Tool = Callable[..., dict[str, Any]]  # (view, raw arguments, **options)


class WriteTurns:
    """What one write tool call holds, from its start to its end (a context manager): with
    ``--git-commit`` the git turn (``_GIT_TURN``); its file steps' ticket (``FileSteps``, which a
    commit about to start and the watcher wait for) until it has submitted its change; and at
    most one note turn (``take``: a new note's folder, then the note). Each is let go once, by
    the method named for the step that ends it, or when the block ends."""

    def __init__(self, index: VaultIndex, git: bool) -> None:
        self._index = index
        self._git = git  # the git turn is held (taken on entering)
        self._steps = False  # the file steps' ticket is open
        self._note: threading.Lock | None = None  # the note turn held

    def __enter__(self) -> WriteTurns:
        if self._git:
            _GIT_TURN.acquire()
        self._index.file_steps.begin()
        self._steps = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_steps()
        if self._git:
            self._git = False
            _GIT_TURN.release()

    def take(self, root: Path, rel: str) -> None:
        """Hold the turn of the file at ``root / rel`` (a note, or a folder about to be made) until
        the file steps end, letting go of the one held before."""
        turn = _NOTE_TURNS[turn_number(root, rel)]
        if self._note is turn:
            return
        if self._note is not None:
            held, self._note = self._note, None
            held.release()
        turn.acquire()
        self._note = turn

    def submitted(self) -> None:
        """The change is submitted to the index: a commit no longer waits for these file steps."""
        if self._steps:
            self._steps = False
            self._index.file_steps.end()

    def end_steps(self) -> None:
        """Done with the note (or failed): the next write of it may begin."""
        self.submitted()
        if self._note is not None:
            held, self._note = self._note, None
            held.release()

    @contextlib.contextmanager
    def git_turn_let_go(self, again: bool) -> Iterator[None]:
        """Without the git turn while the block runs (a commit's wait: other writes' file steps go
        on meanwhile and share the commit); taken back after it when ``again`` (the git commit of
        this call's files follows), else let go for good."""
        if not self._git:
            yield
            return
        self._git = False
        _GIT_TURN.release()
        try:
            yield
        finally:
            if again:
                _GIT_TURN.acquire()
                self._git = True


def one_note_at_a_time(tool: Tool) -> Tool:
    """A write tool, called with its ``WriteTurns`` (as ``turns``): its file steps (to its
    submission) hold the turn of the note they change, or, under ``--git-commit``, the one
    turn of every write."""
    @functools.wraps(tool)
    def serialized(view: View, raw: dict[str, Any], **options: Any) -> dict[str, Any]:
        with WriteTurns(view.vault.index, view.vault.git_commit) as turns:
            return tool(view, raw, turns, **options)

    return serialized


def turn_number(root: Path, rel: str) -> int:
    """Which of the ``NOTE_TURNS`` turns the file at ``root / rel`` takes. Two notes share one
    now and then (one pair in 64, as the process's string hashes fall): their writes then take
    turns too."""
    try:
        where = os.path.realpath(root / rel)
    except (ValueError, OSError):  # a name no file system takes (a NUL): the call refuses it next
        where = str(root / rel)
    return hash(unicodedata.normalize("NFC", where).casefold()) % NOTE_TURNS


def _commit_in_turn(index: VaultIndex, turns: WriteTurns, notes: list[tuple[Note, str]], removed: list[str],
                    again: bool, land: Callable[[], list[str]]) -> list[str]:
    """Index a write's changes, a write tool's last step on the files: submitted while the note's
    turn is held, then committed (or waited for) with the next write of the note free to begin
    meanwhile, so that writes in flight share one commit (``VaultIndex.submit``). ``land``
    journals the change (``journal_and_track``, its warnings returned) after the submission, so that a
    commit gathering the writes in their file steps does not wait for it, and before the turn
    is let go, so that a note's journal keeps the order of its writes. ``again``: take the git
    turn back afterwards (for the git commit of ``serve --git-commit``)."""
    batch = index.submit(notes, removed)
    turns.submitted()
    try:
        warnings = land()
    finally:
        turns.end_steps()
        with turns.git_turn_let_go(again):
            index.commit_batch(batch, timeout=index.write_timeout)
    return warnings


def now_iso() -> str:
    return iso(dt.datetime.now(dt.UTC))


def new_uid() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y%m%d}-{secrets.token_hex(4)}"


def _answer(view: View, note: Note) -> dict[str, Any]:
    return {"status": "ok", "uid": note.uid, "permalink": view.permalink(note.path), "path": note.path,
            "updated": note.updated, "etag": note.etag}


def _attributed(view: View, answer: dict[str, Any], tool: str, agent: str, title: str,
                before: dict[str, bytes | None], warnings: list[str]) -> dict[str, Any]:
    """With ``serve --git-commit``: commit the files this call touched, author the agent; a commit
    that fails is a warning in the answer (and a ``persist_error`` on the agent's next call), never
    a failed write (git/commit.py). ``warnings``: what ``journal_and_track`` said."""
    if view.vault.git_commit:
        warning = write_commit(view.vault.root, tool, agent, title, list(before), before, config=view.config)
        if warning:
            warnings = [*warnings, warning]
            keep_persist_error(view, agent, tool, next(iter(before)), warning)
    if warnings:
        answer.setdefault("warnings", []).extend(warnings)
    return answer


def _index(view: View, turns: WriteTurns, notes: list[tuple[Note, str]], removed: list[str], done: str,
           tool: str, agent: str, changes: list[dict[str, Any]]) -> list[str]:
    """Index what a write tool just did to the files (``changes``, journaled meanwhile: ``journal_and_track``,
    whose warnings it returns); ``done`` says what that was. When the index cannot take it, the
    agent's next call also carries a ``persist_error``."""
    try:
        return _commit_in_turn(view.vault.index, turns, notes, removed, view.vault.git_commit,
                               lambda: journal_and_track(view, tool, agent, changes))
    except IndexBusy:
        keep_persist_error(view, agent, tool, notes[0][1] if notes else removed[0],
                   f"{done}, but not indexed: read tools show it once the index catches up")
        # The file change stands: the watcher (or the next reconcile) indexes it later. A retry
        # would repeat a change that already happened, so the advice says not to; the answer
        # still says which note the file is.
        written = {k: v for k, v in _answer(view, notes[0][0]).items() if k != "status"} if len(notes) == 1 else {}
        raise IndexBusy(f"{done}, but the index's write lock was not obtained in time (another process, "
                        "a build or a merge, holds it); read tools show the change once the index catches "
                        "up on its own", retry=False,
                        advice="do not repeat this call: the change is already in the file and a retry "
                        "would make it twice", **written) from None


def _body_text(args: Args, name: str, config: Settings) -> str | None:
    """A body or paragraph parameter; NUL is refused (the reader drops it and flags the file)."""
    text = args.text(name, None, max_len=config.max_content)
    if text is not None and "\x00" in text:
        raise InvalidInput(name, "holds a NUL character, which a Markdown file cannot keep; remove it")
    return text


def _folder(view: View, domain: str) -> tuple[Path, str]:
    # An existing folder keeps its spelling: "Projects" files into "projects/" (docs/platforms.md).
    domain = existing_spelling(view.vault.root, check_relative(domain.strip(), "domain"))
    check_folder_names(domain, "domain")
    folder = confine(view.vault.root, domain, "domain")
    for part in (folder, *folder.parents):
        if part == view.vault.root or part.is_dir():
            break
        if os.path.lexists(part):
            shown = part.relative_to(view.vault.root).as_posix()
            raise InvalidInput("domain", f"{shown} is a file, not a folder; pass a folder path")
    return folder, domain


def _new_fields(args: Args, agent: str, title: str, defaults: dict[str, Any]) -> dict[str, Any]:
    stamp = now_iso()
    note_type = (args.text("type", None, max_len=64) or "").strip() or defaults.get("type") or "note"
    tags_given = args.str_list("tags")
    tags = normalize_tags(tags_given) if tags_given is not None else list(defaults.get("tags") or [])
    fields: dict[str, Any] = {"id": new_uid(), "title": title, "type": note_type, "tags": tags,
                              "created": stamp, "updated": stamp}
    if args.present("importance"):
        fields["importance"] = args.number("importance")
    for key in ("namespace", "project"):
        value = args.text(key, None, max_len=200)
        if value is not None and value.strip():
            fields[key] = value.strip()
    if args.present("scope"):
        fields["scope"] = args.choice("scope")
    paths = args.str_list("paths")
    if paths:
        fields["paths"] = [p.strip() for p in paths if p.strip()]
    fields["agent"] = agent
    to = _addressed(args)
    if to:
        fields["to"] = to
    fields.update(defaults.get("extra", {}))
    return fields


def _create(view: View, turns: WriteTurns, args: Args, agent: str, defaults: dict[str, Any],
            tool: str) -> dict[str, Any]:
    title = args.required_str("title", max_len=view.config.max_title).strip()
    content = _body_text(args, "content", view.config) or ""
    domain = args.text("domain", None, max_len=1000)
    domain = domain if domain is not None else defaults.get("domain", "")
    # The folder's turn until the note has its name: two writes into a new folder spelled
    # "Projects" and "projects" would each make one on a case-sensitive disk.
    turns.take(view.vault.root, domain.strip())
    folder, domain = _folder(view, domain)
    target = f"{domain}/{note_filename(title, config=view.config)}".lstrip("/")
    view.check_write(target, tool, target)
    fields = _new_fields(args, agent, title, defaults)
    data = render_note(fields, content, config=view.config).encode("utf-8")
    final = create_exclusive(folder, note_filename(title, config=view.config), data, within=view.vault.root,
                             config=view.config)
    rel = final.relative_to(view.vault.root).as_posix()
    if rel != target:
        check_free_name(view, final, target, rel, tool)
    turns.take(view.vault.root, rel)  # nobody else knows the name yet; an edit of it waits for its journal entry
    note = read_note(view.vault.root, rel, view.vault.index.history, config=view.config)
    warnings = _index(view, turns, [(note, rel)], [], f"{note.path} was saved", tool, agent,
                      [change(rel, rel, title, fields["id"], None, data, real=note.real)])
    return _attributed(view, _answer(view, note), tool, agent, note.title, {rel: None}, warnings)


def _with_similar(view: View, answer: dict[str, Any], title: str, content: str, exclude: list[str],
                  limit: int) -> dict[str, Any]:
    """``answer`` with ``similar``: the notes the call's view held before the write that say nearly
    the same (search/similar.py), so that the agent can edit or supersede one instead; the new
    note and ``exclude`` (paths) left out. Finding them never fails the write: what cannot be
    looked at is logged and ``similar`` stays empty."""
    rows: list[dict[str, Any]] = []
    try:
        skip = {doc for path in [answer["path"], *exclude] if (doc := view.snapshot.by_path(path)) is not None}
        for found in resembling(view.snapshot, title, content, exclude=skip, limit=limit):
            record = view.snapshot.record(found.docnum)
            rows.append({"permalink": view.permalink(record["path"]), "title": record.get("title") or "",
                         "similarity": found.resemblance})
    except (VaultMemError, OSError) as exc:
        log.warning("cannot look for notes similar to %s: %s", answer["path"], exc)
    return {**answer, "similar": rows}


def _addressed(args: Args) -> list[str] | None:
    """The ``to`` parameter: agent names, each well formed, or None when not given."""
    names = args.str_list("to", max_items=50)
    if names is None:
        return None
    return list(dict.fromkeys(check_agent_name(n.strip(), "to") for n in names if n.strip()))


def _shown(view: View, similar: int | None) -> int:
    return view.config.similar_shown if similar is None else similar


@one_note_at_a_time
def memory_write(view: View, raw: dict[str, Any], turns: WriteTurns, similar: int | None = None) -> dict[str, Any]:
    """``similar``: at most so many notes that say nearly the same in the answer (0: none looked for;
    None: the ``similar_shown`` setting)."""
    args = Args(raw, WRITE_PARAMS, config=view.config)
    answer = _create(view, turns, args, args.agent(), {}, "memory_write")
    return _with_similar(view, answer, args.required_str("title", max_len=view.config.max_title).strip(),
                         _body_text(args, "content", view.config) or "", [], _shown(view, similar))


@one_note_at_a_time
def memory_supersede(view: View, raw: dict[str, Any], turns: WriteTurns,
                     similar: int | None = None) -> dict[str, Any]:
    """``similar``: as memory_write's; the note it replaces is never listed."""
    args = Args(raw, SUPERSEDE_PARAMS, config=view.config)
    agent = args.agent()
    old = view.snapshot.record(resolve_ref(view, args.required_str("ref", max_len=1000)))
    # Superseding retires the old note from every default list: the old note's write rule applies.
    view.check_write(old["path"], "memory_supersede", old.get("fsrel") or old["path"])
    defaults = {"domain": old["path"].rpartition("/")[0], "type": old["type"], "tags": old["tags"],
                "extra": {FIELD["supersedes"].key: old["uid"]}}
    answer = _create(view, turns, args, agent, defaults, "memory_supersede")
    if answer.get("status") == "ok" and not old.get("valid_until"):
        try:  # the old note stops being true when its successor is written (docs/vault-format.md)
            rel, data = _current(view, turns, old["uid"] if old.get("has_id") else old["path"], "memory_supersede")
            text = set_keys(decode_for_edit(data, rel), {FIELD["valid_until"].key: answer["updated"]}, rel,
                            config=view.config)
            ended = _rewrite(view, turns, rel, data, text, "memory_supersede", agent)
            if ended.get("warnings"):
                answer.setdefault("warnings", []).extend(ended["warnings"])
        except (Conflict, NotFound, InvalidInput, WriteFailed) as exc:
            answer.setdefault("warnings", []).append(
                f"the new version was saved, but {old['path']} did not get valid_until: {exc}")
    config = view.config
    return _with_similar(view, answer, args.required_str("title", max_len=config.max_title).strip(),
                         _body_text(args, "content", config) or "", [old["path"]], _shown(view, similar))


def _current(view: View, turns: WriteTurns, ref: str, tool: str) -> tuple[str, bytes]:
    """The target's OS-relative path and its bytes as they are now; Forbidden when the caller
    may not change it."""
    record = view.snapshot.record(resolve_ref(view, ref))
    rel = record.get("fsrel") or record["path"]
    view.check_write(record["path"], tool, rel)
    turns.take(view.vault.root, rel)
    try:
        data = read_whole(note_file(view.vault.root, rel), config=view.config)
    except FileNotFoundError:
        raise NotFound(f"{record['path']} is gone from the vault (deleted or moved since it was indexed)") from None
    except OSError as exc:
        raise WriteFailed(f"{record['path']} cannot be read ({exc.strerror}); nothing was changed") from exc
    # The call's view may predate a delete of this note and a new note under its name, made
    # while this write waited for the turn: the note asked for is gone, not the new one. (Only
    # a declared id tells: a derived one follows the path, and a write pins it into the file.)
    if record.get("has_id") and read_note(view.vault.root, rel, None, config=view.config).uid != record["uid"]:
        raise NotFound(f"{record['path']} now holds another note (id changed since it was indexed): "
                       f"the one asked for ({record['uid']}) was deleted or moved; nothing was changed")
    return rel, data


def _check_preconditions(args: Args, rel: str, data: bytes, root: Path, history: DateSource | None) -> None:
    if_etag = args.text("if_etag", None, max_len=100)
    if_updated = args.text("if_updated", None, max_len=100)
    if if_etag is None and if_updated is None:
        return
    note = read_note(root, rel, history, config=args.config)
    if if_etag is not None and if_etag.strip() != file_etag(data):
        raise Conflict(f"{note.path} changed since it was read (etag {if_etag} is stale); read it again",
                       etag=note.etag, updated=note.updated)
    if if_updated is not None:
        given = parse_datetime(if_updated)
        if given is None:
            raise InvalidInput("if_updated", f"must be an ISO date or datetime, got {if_updated!r}")
        if iso(given) != note.updated:
            raise Conflict(f"{note.path} was updated at {note.updated}, not {if_updated}; read it again",
                           etag=note.etag, updated=note.updated)


def _stamped(view: View, rel: str, updates: dict[str, Any]) -> dict[str, Any]:
    """``updates`` plus ``updated`` (now), and the ``id`` and ``created`` the note has had so far
    when its file does not declare them: write tools always write both (docs/tools.md), and without
    them the uid would change on a rename and ``created`` would follow this write's mtime."""
    note = read_note(view.vault.root, rel, view.vault.index.history, config=view.config)
    keep: dict[str, Any] = {}
    if FIELD["uid"].key not in note.fields:
        keep[FIELD["uid"].key] = note.uid
    if not any(key in note.fields for key in FIELD["created"].keys):
        keep[FIELD["created"].key] = note.created
    return {**keep, **updates, "updated": now_iso()}


def _rewrite(view: View, turns: WriteTurns, rel: str, before: bytes, new_text: str, tool: str,
             agent: str) -> dict[str, Any]:
    """Write ``new_text`` over ``rel`` unless the file changed since ``before`` was read."""
    path = view.vault.root / rel
    try:
        if path.read_bytes() != before:
            note = read_note(view.vault.root, rel, view.vault.index.history, config=view.config)
            raise Conflict(f"{note.path} changed while it was being edited; read it again",
                           etag=note.etag, updated=note.updated)
    except FileNotFoundError:
        raise NotFound(f"{rel} was removed while it was being edited") from None
    data = new_text.encode("utf-8")
    atomic_write(path, data, within=view.vault.root, config=view.config)
    # Read once: journaled, then indexed.
    note = read_note(view.vault.root, rel, view.vault.index.history, config=view.config)
    warnings = _index(view, turns, [(note, rel)], [], f"{note.path} was saved", tool, agent,
                      [change(note.path, rel, note.title, note.uid, before, data, real=note.real)])
    return _attributed(view, _answer(view, note), tool, agent, note.title, {rel: before}, warnings)


@one_note_at_a_time
def memory_edit(view: View, raw: dict[str, Any], turns: WriteTurns) -> dict[str, Any]:
    args = Args(raw, EDIT_PARAMS, config=view.config)
    agent = args.agent()
    ref = args.required_str("ref", max_len=1000)
    content = _body_text(args, "content", view.config)
    append = _body_text(args, "append", view.config)
    updates = args.mapping("set")
    to = _addressed(args)
    if content is None and append is None and updates is None and to is None:
        raise InvalidInput("content", "nothing to change: pass content (new body), append (a paragraph), "
                           "set (frontmatter keys) or to (addressees)")
    if updates is not None:
        for key in updates:
            if not str(key).strip():
                raise InvalidInput("set", "keys must not be empty")
            if key == FIELD["uid"].key:
                raise InvalidInput("set", "the id of a memory cannot be changed")
    if to is not None:
        updates = {**(updates or {}), "to": to}
    for attempt in range(3):
        rel, data = _current(view, turns, ref, "memory_edit")
        check_effects(view, rel, updates or {}, "memory_edit")
        _check_preconditions(args, rel, data, view.vault.root, view.vault.index.history)
        text = decode_for_edit(data, rel)
        if content is not None:
            text = replace_body(text, content, rel)
        if append is not None:
            text = append_paragraph(text, append, rel)
        text = set_keys(text, _stamped(view, rel, updates or {}), rel, config=view.config)
        try:
            return _rewrite(view, turns, rel, data, text, "memory_edit", agent)
        except Conflict:
            # Someone saved in between: an append re-reads and tries again; anything else reports it.
            if append is None or content is not None or attempt == 2:
                raise
    raise AssertionError("unreachable")


@one_note_at_a_time
def task_close(view: View, raw: dict[str, Any], turns: WriteTurns) -> dict[str, Any]:
    args = Args(raw, CLOSE_PARAMS, config=view.config)
    agent = args.agent()
    ref = args.required_str("ref", max_len=1000)
    state = args.choice("state")
    record = view.snapshot.record(resolve_ref(view, ref))
    if record["type"] != "task":
        raise InvalidInput("ref", f"{view.permalink(record['path'])} is a {record['type']}, not a task")
    rel, data = _current(view, turns, ref, "task_close")
    _check_preconditions(args, rel, data, view.vault.root, view.vault.index.history)
    text = set_keys(decode_for_edit(data, rel), _stamped(view, rel, {"state": state, "status": "archived"}), rel,
                    config=view.config)
    return _rewrite(view, turns, rel, data, text, "task_close", agent)


@one_note_at_a_time
def memory_delete(view: View, raw: dict[str, Any], turns: WriteTurns) -> dict[str, Any]:
    args = Args(raw, DELETE_PARAMS, config=view.config)
    agent = args.agent()
    ref = args.required_str("ref", max_len=1000)
    rel, data = _current(view, turns, ref, "memory_delete")
    _check_preconditions(args, rel, data, view.vault.root, view.vault.index.history)
    note = read_note(view.vault.root, rel, view.vault.index.history, config=view.config)
    trashed = move_to_trash(view.vault.root, rel, config=view.config)
    warnings = _index(view, turns, [], [note.path], f"{note.path} was moved to {trashed}", "memory_delete", agent,
                      [change(note.path, rel, note.title, note.uid, data, None, trash=trashed, real=note.real)])
    answer = {"status": "ok", "uid": note.uid, "permalink": view.permalink(note.path), "path": trashed,
              "updated": note.updated, "etag": note.etag, "deleted": True,
              "message": f"moved {note.path} to {trashed}; restore it by moving it back"}
    return _attributed(view, answer, "memory_delete", agent, note.title, {note.path: data}, warnings)


__all__ = ["memory_delete", "memory_edit", "memory_supersede", "memory_write", "task_close"]
