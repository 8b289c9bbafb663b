"""The agents' state file (history/agentstate.py): one line for the whole state, then one line per
change, rewritten whole when the changes outgrow it. What a process reads, parsing only what
was added since its last look, is always what a fresh parse of the file gives, and what a
plain model of the changes says."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import Tuned

from vault_mem import settings
from vault_mem.history import agentstate


@pytest.fixture
def two_processes(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    """Two parse caches, as two processes on one vault have; ``as_process`` switches."""
    caches: dict[str, dict[str, Any]] = {"writer": {}, "reader": {}}
    monkeypatch.setattr(agentstate, "_cache", caches["writer"])
    return caches


def as_process(monkeypatch: pytest.MonkeyPatch, caches: dict[str, dict[str, Any]], name: str) -> None:
    monkeypatch.setattr(agentstate, "_cache", caches[name])


def fresh(index_dir: Path, agent: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The state as a process that never read the file before parses it."""
    with monkeypatch.context() as m:
        m.setattr(agentstate, "_cache", {})
        return agentstate.load(index_dir, agent)


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_each_change_appends_one_line_and_the_state_line_stays(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]]) -> None:
    index_dir = tmp_path / "ix"
    agentstate.change(index_dir, "coder", lambda s: s.put("wrote", "a.md", ["u1", "a", "A"]), config=settings.current())
    path = agentstate.state_file(index_dir, "coder")
    [first] = lines(path)
    assert json.loads(first)["wrote"] == {"a.md": ["u1", "a", "A"]} and json.loads(first)["agent"] == "coder"
    agentstate.change(index_dir, "coder", lambda s: s.put("wrote", "b.md", ["u2", "b", "B"]), config=settings.current())
    agentstate.change(index_dir, "coder", lambda s: s.put("wrote", "a.md", ["u1", "a", "A2"]),
        config=settings.current())  # newest last
    agentstate.change(index_dir, "coder", lambda s: s.put("read", "x", "2026-01-01T00:00:00Z"),
        config=settings.current())
    agentstate.change(index_dir, "coder", lambda s: s.drop("wrote", "missing.md"),
        config=settings.current())  # no change: no line
    assert lines(path)[0] == first and len(lines(path)) == 4
    expected = {"read": {"x": "2026-01-01T00:00:00Z"}, "wrote": {"b.md": ["u2", "b", "B"], "a.md": ["u1", "a", "A2"]},
                "errors": []}
    for state in (agentstate.load(index_dir, "coder"), fresh(index_dir, "coder", monkeypatch)):
        assert state == expected and list(state["wrote"]) == ["b.md", "a.md"]


def test_the_file_is_rewritten_whole_when_its_changes_outgrow_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]]) -> None:
    index_dir = tmp_path / "ix"
    for i in range(400):
        agentstate.change(index_dir, "coder", lambda s, i=i: s.put("read", f"uid-{i % 7}", f"t{i}"),
            config=settings.current())
    path = agentstate.state_file(index_dir, "coder")
    data = path.read_bytes()
    base = len(lines(path)[0])
    assert len(data) <= 2 * base + settings.current().state_rewrite_slack  # 400 lines would be far more
    assert fresh(index_dir, "coder", monkeypatch)["read"] == {f"uid-{i % 7}": f"t{i}" for i in range(393, 400)}


def test_a_reader_follows_appends_and_rewrites_as_a_fresh_parse_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]],
        tuned: Tuned) -> None:
    """Random changes by one process, read now and then by another that keeps what it parsed:
    both always agree with a fresh parse and with a plain model of the changes (bounds and
    rewrites made small so that both happen often)."""
    tuned(state_max_read=12)
    tuned(state_max_wrote=9)
    tuned(state_rewrite_slack=300)
    index_dir = tmp_path / "ix"
    rng = random.Random(7)
    model: dict[str, Any] = agentstate.empty()
    rewrites = 0
    path = agentstate.state_file(index_dir, "a")
    for step in range(600):
        where, key = rng.choice(agentstate.MAPS), f"k{rng.randrange(25)}é"
        kind = rng.randrange(4)

        def edit(s: agentstate.Changes, kind: int = kind, where: str = where, key: str = key, step: int = step) -> None:
            if kind == 0:
                s.drop(where, key)
            elif kind == 1:
                s.add_error({"n": step})
            else:
                s.put(where, key, [step, "\udcff" if step % 5 == 0 else "v"])

        as_process(monkeypatch, two_processes, "writer")
        head = path.read_bytes()[:30] if path.exists() else b""
        agentstate.change(index_dir, "a", edit, config=settings.current())
        rewrites += path.read_bytes()[:30] != head
        if kind == 0:
            model[where].pop(key, None)
        elif kind == 1:
            model["errors"] = [*model["errors"], {"n": step}][-settings.current().state_max_errors:]
        else:
            model[where].pop(key, None)
            model[where][key] = [step, "\udcff" if step % 5 == 0 else "v"]
            most = settings.current().state_max_read if where == "read" else settings.current().state_max_wrote
            while len(model[where]) > most:
                model[where].pop(next(iter(model[where])))
        if rng.random() < 0.3:
            as_process(monkeypatch, two_processes, "reader")
            seen = agentstate.load(index_dir, "a")
            assert seen == model
            assert [list(seen[m]) for m in agentstate.MAPS] == [list(model[m]) for m in agentstate.MAPS]
    assert fresh(index_dir, "a", monkeypatch) == model
    assert rewrites > 10


def test_a_line_not_yet_whole_waits_and_a_torn_one_is_dropped_at_the_next_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]]) -> None:
    index_dir = tmp_path / "ix"
    agentstate.change(index_dir, "a", lambda s: s.put("read", "one", "t1"), config=settings.current())
    path = agentstate.state_file(index_dir, "a")
    line = json.dumps([["put", "read", "two", "t2"]]).encode() + b"\n"
    with open(path, "ab") as file:  # another process half way through its append
        file.write(line[:10])
    as_process(monkeypatch, two_processes, "reader")
    assert agentstate.load(index_dir, "a")["read"] == {"one": "t1"}
    with open(path, "ab") as file:
        file.write(line[10:])
    assert agentstate.load(index_dir, "a")["read"] == {"one": "t1", "two": "t2"}
    with open(path, "ab") as file:  # a process that died in the middle of its append
        file.write(b'[["put", "read", "thr')
    assert agentstate.load(index_dir, "a")["read"] == {"one": "t1", "two": "t2"}
    as_process(monkeypatch, two_processes, "writer")
    agentstate.change(index_dir, "a", lambda s: s.put("read", "four", "t4"), config=settings.current())
    assert b"thr" not in path.read_bytes() and len(lines(path)) == 1  # rewritten whole, without it
    for name in ("writer", "reader"):
        as_process(monkeypatch, two_processes, name)
        assert agentstate.load(index_dir, "a")["read"] == {"one": "t1", "two": "t2", "four": "t4"}


@pytest.mark.parametrize("damage", [b"not json\n", b'{"a": 1}\n', b'[["put", "nowhere", "k", 1]]\n',
                                    b'[["put", "read", 5, 1]]\n', b'[["errors", "x"]]\n', b"[[]]\n"])
def test_a_damaged_change_line_ends_what_is_read_and_the_next_change_rewrites(
        tmp_path: Path, damage: bytes, monkeypatch: pytest.MonkeyPatch,
        two_processes: dict[str, dict[str, Any]]) -> None:
    index_dir = tmp_path / "ix"
    agentstate.change(index_dir, "a", lambda s: s.put("read", "one", "t1"), config=settings.current())
    path = agentstate.state_file(index_dir, "a")
    with open(path, "ab") as file:
        file.write(damage + json.dumps([["put", "read", "after", "t"]]).encode() + b"\n")
    assert fresh(index_dir, "a", monkeypatch)["read"] == {"one": "t1"}
    agentstate.change(index_dir, "a", lambda s: s.put("read", "two", "t2"), config=settings.current())
    assert len(lines(path)) == 1
    assert fresh(index_dir, "a", monkeypatch)["read"] == {"one": "t1", "two": "t2"}


def test_a_state_file_of_0_4_is_read_and_rewritten_at_its_next_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]]) -> None:
    index_dir = tmp_path / "ix"
    path = agentstate.state_file(index_dir, "a")
    path.parent.mkdir(parents=True)
    old = {"read": {"r": "t"}, "wrote": {"w.md": ["u", "w", "W"]}, "errors": [], "agent": "a"}
    path.write_text(json.dumps(old), encoding="utf-8")  # one object, no newline
    assert agentstate.load(index_dir, "A") == {"read": {"r": "t"}, "wrote": {"w.md": ["u", "w", "W"]}, "errors": []}
    agentstate.change(index_dir, "a", lambda s: s.put("read", "r2", "t2"), config=settings.current())
    [line] = lines(path)
    assert json.loads(line)["gen"] and json.loads(line)["read"] == {"r": "t", "r2": "t2"}
    assert fresh(index_dir, "a", monkeypatch)["wrote"] == {"w.md": ["u", "w", "W"]}


def test_a_state_with_no_such_part_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="has no 'seen'"):
        agentstate.change(tmp_path / "ix", "a", lambda s: s.put("seen", "k", 1), config=settings.current())
    with pytest.raises(ValueError, match="has no 'seen'"):
        agentstate.change(tmp_path / "ix", "a", lambda s: s.drop("seen", "k"), config=settings.current())


def test_a_state_file_that_cannot_be_read_is_never_replaced_by_an_empty_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_processes: dict[str, dict[str, Any]]) -> None:
    """On Windows a file being replaced cannot be opened for a moment: a change then fails (its
    callers log it) instead of starting from an empty state, and a reader sees an empty state
    that once, not until the file next changes."""
    index_dir = tmp_path / "ix"
    agentstate.change(index_dir, "a", lambda s: s.put("read", "one", "t1"), config=settings.current())
    agentstate.change(index_dir, "a", lambda s: s.put("read", "two", "t2"), config=settings.current())
    path = agentstate.state_file(index_dir, "a")
    kept = path.read_bytes()

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "in use by another process")

    as_process(monkeypatch, two_processes, "reader")
    with monkeypatch.context() as m:
        m.setattr(agentstate, "open", refused, raising=False)
        assert agentstate.load(index_dir, "a") == agentstate.empty()
        as_process(m, two_processes, "writer")
        two_processes["writer"].clear()  # as a process that has not read it yet
        with pytest.raises(OSError):
            agentstate.change(index_dir, "a", lambda s: s.put("read", "three", "t3"), config=settings.current())
    assert path.read_bytes() == kept
    for name in ("reader", "writer"):
        as_process(monkeypatch, two_processes, name)
        assert agentstate.load(index_dir, "a")["read"] == {"one": "t1", "two": "t2"}
