"""Shared fixtures: real vaults in tmp_path, a real index, a real in-process MCP client."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client

from vault_mem import settings
from vault_mem.mcp_server.answers import IS_ERROR
from vault_mem.mcp_server.app import build_server
from vault_mem.search.api import VaultIndex, install_whoosh_patches, reading, sync
from vault_mem.served.context import Vault
from vault_mem.vault.note import Note
from vault_mem.vault.reader import read_note

SAMPLE_VAULT = Path(__file__).resolve().parent.parent / "sample_vault"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False, help="run the long fuzz and load tests")


def pytest_configure(config: pytest.Config) -> None:
    # As the command line does at start. VAULT_MEM_WHOOSH_PATCHES=none runs the suite on Whoosh's
    # own code: the patches are speed, never meaning (CI runs a part of the suite that way).
    install_whoosh_patches(settings.current())


WHOOSH_PATCHES = "VAULT_MEM_WHOOSH_PATCHES"  # docs/settings.md: which Whoosh patches a process puts in place


@pytest.fixture
def whoosh_patches() -> Iterator[None]:
    """Every Whoosh patch in place for one test (a test of what a patch does), whatever the run chose."""
    chosen = os.environ.get(WHOOSH_PATCHES)
    os.environ[WHOOSH_PATCHES] = "all"
    try:
        install_whoosh_patches(settings.current())
        yield
    finally:
        if chosen is None:
            del os.environ[WHOOSH_PATCHES]
        else:
            os.environ[WHOOSH_PATCHES] = chosen
        install_whoosh_patches(settings.current())


# The files CI runs a second time on Whoosh's own code (VAULT_MEM_WHOOSH_PATCHES=none, the README's
# test command): what the patches touch (writing, merging and reading postings, search, reads), kept
# short. By file name, so that it holds wherever the file sits under tests/.
PATCHES_OFF_SUBSET = frozenset({"test_memory_search", "test_read", "test_write_tools", "test_index", "test_merge",
                                "test_postings", "test_query", "test_topk"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in PATCHES_OFF_SUBSET:
            item.add_marker(pytest.mark.patches_off_subset)
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="needs --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def own_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Agent keys (served/keys.py) go to a folder of the test's own, never the real home's;
    servers started as subprocesses inherit it through the environment."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


Tuned = Callable[..., settings.Settings]


@pytest.fixture
def tuned() -> Iterator[Tuned]:
    """``tuned(field=value, ...)`` changes the process's settings for the rest of one test; the
    settings before it come back after it."""
    before = settings.current()

    def tune(**changes: Any) -> settings.Settings:
        chosen = dataclasses.replace(settings.current(), **changes)
        settings.configure(chosen)
        return chosen

    yield tune
    settings.configure(before)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_notes(root: Path, notes: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (text is dedented) and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def commit_note(index: VaultIndex, rel: str, text: str) -> None:
    """Write the note ``rel`` and index it in a commit of its own, as the watcher commits a save:
    one new one-note segment, and its old copy (if any) deleted where it was."""
    (index.root / rel).write_text(text, encoding="utf-8")
    index.apply([(read_note(index.root, rel, config=settings.current()), rel)], [])


def commit_removal(index: VaultIndex, rel: str) -> None:
    """Delete the note ``rel`` and drop it from the index in a commit of its own."""
    (index.root / rel).unlink()
    index.apply([], [rel])


def churn(index: VaultIndex, meta: dict[str, Any], rng: random.Random, edits: int, removals: int,
          changed: Callable[[str], Any], text: Callable[[str], str]) -> None:
    """Edit ``edits`` random notes of ``meta`` (path -> what ``text`` writes; ``changed(path)``: the
    new value) and delete ``removals``, each in a commit of its own: the index then has several
    segments, older ones with deletions."""
    for rel in rng.sample(sorted(meta), edits):
        meta[rel] = changed(rel)
        commit_note(index, rel, text(rel))
    for rel in rng.sample(sorted(meta), removals):
        del meta[rel]
        commit_removal(index, rel)
    with reading(index) as snapshot:
        assert snapshot.segment_count() > 1


def open_vault(root: Path, project: str | None = None, compat: bool = False) -> Vault:
    """Index ``root`` (build or reconcile) and return the Vault the server and queries use."""
    index = VaultIndex(root, root.parent / f"{root.name}-index", config=settings.current())
    sync(index, procs=1)
    return Vault(root, index, project=project, compat=compat)


def stored(index: VaultIndex, path: str) -> dict[str, Any] | None:
    """The record the index holds for ``path``, as committed now (None when it holds none)."""
    with reading(index) as snapshot:
        docnum = snapshot.by_path(path)
        return None if docnum is None else copy.deepcopy(snapshot.record(docnum))


def has_path(index: VaultIndex, path: str) -> bool:
    return stored(index, path) is not None


def note_dict(note: Note) -> dict[str, Any]:
    """A parsed note as one plain dict: its fields plus domain, permalink and est_tokens."""
    out = asdict(note)
    out.update(domain=note.domain, permalink=note.permalink, est_tokens=note.est_tokens)
    return out


@pytest.fixture
def make_vault(tmp_path: Path) -> Callable[..., Vault]:
    """``make_vault({path: text}, project=None)``: a real vault on disk, indexed."""
    counter = [0]

    def make(notes: dict[str, str], project: str | None = None, compat: bool = False) -> Vault:
        counter[0] += 1
        root = write_notes(tmp_path / f"vault{counter[0]}", notes)
        return open_vault(root, project, compat)

    return make


T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 10.0, what: str = "condition") -> T:
    """Poll ``check`` every 10 ms until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} still false after {timeout} s")
        time.sleep(0.01)


def in_threads(target: Callable[[], object], count: int, timeout: float = 30.0) -> None:
    """Run ``target`` in ``count`` threads at once and wait for all; fail if one is still running
    after ``timeout`` seconds (a hang, not a slow machine)."""
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        if thread.is_alive():
            raise AssertionError(f"a thread still running after {timeout} s")


def closed(schema: Any) -> Any:
    """``schema`` with every object that lists its properties closed to any other: what the
    published schema leaves open for later versions, a test holds to what it says today."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) if key != "properties" else {k: closed(v) for k, v in value.items()}
           for key, value in schema.items()}
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


_VALIDATORS: dict[str, Any] = {}


def check_answer(tool: str, schema: dict[str, Any], answer: Any) -> None:
    """Fail unless ``answer`` validates against ``schema`` closed (``closed``), Draft 2020-12."""
    from jsonschema import Draft202012Validator

    key = json.dumps(schema, sort_keys=True)
    validator = _VALIDATORS.get(key)
    if validator is None:
        Draft202012Validator.check_schema(schema)
        validator = _VALIDATORS[key] = Draft202012Validator(closed(schema))
    errors = sorted(validator.iter_errors(answer), key=lambda e: list(e.absolute_path))
    assert not errors, f"{tool} answered outside its output schema: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}" for e in errors[:5])


@pytest.fixture(autouse=True)
def answers_match_their_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tool answer an in-process server gives in any test is checked against its tool's
    output schema (mcp_server/outputs.py), closed: the schema says every field the answer has."""
    from vault_mem.mcp_server import app
    from vault_mem.mcp_server.outputs import ANSWERS, output_schema

    answer = app.Calls.answer

    def checked(self: app.Calls, name: str, arguments: Any, caller: Any, *reach: Any) -> dict[str, Any]:
        given = answer(self, name, arguments, caller, *reach)
        if name in ANSWERS:
            check_answer(name, output_schema(name, self.served.several), json.loads(json.dumps(given, default=str)))
        return given

    monkeypatch.setattr(app.Calls, "answer", checked)


class ToolClient:
    """A real MCP client session on the in-process server, with a shortcut for tool answers;
    each answer is checked against the output schema its tool was listed with (``check_answer``)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.schemas: dict[str, dict[str, Any]] = {}

    async def schema_of(self, tool: str) -> dict[str, Any] | None:
        if not self.schemas:
            listed = await self.client.list_tools()
            self.schemas = {t.name: t.output_schema for t in listed.tools if t.output_schema is not None}
        return self.schemas.get(tool)

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        answer = result.structured_content
        assert isinstance(answer, dict), f"{tool} gave no structured content: {result.content}"
        schema = await self.schema_of(tool)
        if schema is not None:
            check_answer(tool, schema, answer)
        assert "status" in answer
        assert result.is_error == (answer["status"] in IS_ERROR), answer
        # A client that reads only the text block must get the very same answer.
        assert [block.type for block in result.content] == ["text"], result.content
        assert json.loads(result.content[0].text) == answer
        return answer

    async def raw(self, tool: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool(tool, arguments)


async def connect(vault: Vault) -> AsyncIterator[ToolClient]:
    async with Client(build_server(vault), mode="legacy") as client:
        yield ToolClient(client)


@pytest.fixture
def mcp_session() -> Callable[[Vault], Any]:
    """``async with mcp_session(vault) as c: await c.call("tool", ...)``"""
    from contextlib import asynccontextmanager

    return asynccontextmanager(connect)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system's Chromium, driven by Playwright, for a module's browser tests
    (tests/integration/test_ui_browser.py says where it comes from and with which flags)."""
    from playwright.sync_api import sync_playwright
    from test_ui_browser import CHROMIUM, FLAGS

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield chromium
        chromium.close()
