"""Bounded answers (docs/tools.md, "Rules every tool follows") through the real MCP session: no answer of
any read tool passes 40,000 characters of JSON, big results page with ``next_offset`` (and paging walks every
result exactly once), big notes page their body in ``memory_read``, and nothing is cut
without saying so.

One vault, built once for the module: 5,000 notes under ``bulk/`` (4,000 filed directly,
1,000 in a folder each, so that ``list_domains`` pages too), and beside them a 20 MB note,
a note of 200,000 lines, a note with 10,000 tags, one with a 100,000-character title and
one with a 5,000-key frontmatter mapping.

A file over 2 MiB is indexed up to that size (docs/vault-format.md), and ``memory_read`` pages exactly
that indexed text: ``body_chars``, ``est_tokens``, the pages and search all agree, and the
answer's ``problems`` says how big the file is and where it was cut.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from conftest import ToolClient, connect

from vault_mem import settings
from vault_mem.reads.rows import cut_message
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault
from vault_mem.vault.frontmatter import split_frontmatter
from vault_mem.vault.reader import decode

pytestmark = pytest.mark.anyio

BOUND = 40_000
BULK = 5_000
FOLDERED = 1_000  # bulk notes filed one per sub-folder
HUGE_MB = 20
LINES = 200_000
TAGS = 10_000
TITLE_CHARS = 100_000
META_KEYS = 5_000


def bulk_note(i: int) -> str:
    # three notes share each timestamp, so the path tie-break decides their order
    minute = i // 3
    stamp = f"2024-01-{1 + minute // 1440:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"
    return (f"---\nid: b{i:04d}\ncreated: {stamp}\nupdated: {stamp}\ntags: [bulk]\n---\n"
            f"# Bulk {i}\n\nBulk note number {i} about widgets.\n")


def huge_notes() -> dict[str, str]:
    filler = "".join(f"filler line {i} about the huge note\n" for i in range(1000))
    twenty = ("---\nid: twenty\ntitle: Twenty megabytes\ncreated: 2023-06-01\n---\n"
              "earlymarker starts the body\n")
    twenty += filler * (HUGE_MB * 2**20 // len(filler) + 1)
    cut = settings.current().max_note_bytes + 1000
    twenty = twenty[:cut] + "latemarker past the cut\n" + twenty[cut:]
    return {
        "huge/twenty.md": twenty,
        "huge/lines.md": "---\nid: lines\ncreated: 2023-06-02\n---\n"
                         + "".join(f"{i}\n" for i in range(LINES)),
        "huge/tags.md": "---\nid: tags\ncreated: 2023-06-03\ntags:\n"
                        + "".join(f"  - tag{i:05d}\n" for i in range(TAGS))
                        + "---\nA note with ten thousand tags.\n",
        "huge/title.md": f"---\nid: title\ncreated: 2023-06-04\ntitle: {'T' * TITLE_CHARS}\n---\n"
                         "A note with a very long title.\n",
        "huge/heading.md": f"---\nid: heading\ncreated: 2023-06-06\n---\n# {'H' * TITLE_CHARS}\n\n"
                           "Under a huge heading.\n",
        "huge/meta.md": "---\nid: meta\ncreated: 2023-06-05\n"
                        + "".join(f"key{i:04d}: value number {i}\n" for i in range(META_KEYS))
                        + "---\nA note with huge metadata.\n",
    }


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("bounded") / "vault"
    for i in range(BULK):
        folder = root / "bulk" / (f"g{i:04d}" if i < FOLDERED else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i:04d}.md").write_text(bulk_note(i), encoding="utf-8")
    for rel, text in huge_notes().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    # two build workers: the 5,000 notes take about half the time of a serial build
    index = VaultIndex(root, root.parent / "index", config=settings.current())
    sync(index, procs=2)
    return Vault(root, index)


@asynccontextmanager
async def session(vault: Vault) -> AsyncIterator[ToolClient]:
    async for client in connect(vault):
        yield client


def size(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer, ensure_ascii=False))


async def call(c: ToolClient, tool: str, **args: Any) -> dict[str, Any]:
    """A tool call whose answer must stay within the bound."""
    answer = await c.call(tool, **args)
    assert size(answer) <= BOUND, (tool, args, size(answer))
    return answer


async def walk(c: ToolClient, tool: str, key: str, **args: Any) -> list[dict[str, Any]]:
    """Every row of every page, following ``next_offset`` from 0."""
    rows: list[dict[str, Any]] = []
    offset = 0
    pages = 0
    while True:
        answer = await call(c, tool, offset=offset, **args)
        assert answer["status"] == "ok", answer
        rows += answer[key]
        pages += 1
        assert pages < 10_000
        if "next_offset" not in answer:
            return rows
        assert answer["next_offset"] == offset + len(answer[key])
        offset = answer["next_offset"]


def said_so(answer: dict[str, Any]) -> str:
    """Everything an answer says about itself: message, warnings, hints, cut markers."""
    said = [answer.get("message") or "", *answer.get("warnings", []), *answer.get("hints", [])]
    return " ".join(str(s) for s in said)


def the_body(text: str) -> str:
    """What the index and memory_read hold of a note: its first 2 MiB, decoded, without frontmatter."""
    config = settings.current()
    return split_frontmatter(decode(text.encode("utf-8")[:config.max_note_bytes], config)[0]).body


# -- big result sets page, and paging walks everything once ---------------------------------


async def test_list_by_domain_pages_every_note_once(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "list_by_domain", "results", domain="bulk", limit=200)
        flat = await walk(c, "list_by_domain", "results", domain="bulk", limit=200, subtree=False)
    uids = [r["uid"] for r in rows]
    assert len(uids) == BULK and set(uids) == {f"b{i:04d}" for i in range(BULK)}
    order = [(r["updated"], r["path"]) for r in rows]
    assert order == sorted(order, key=lambda k: (-_epoch(k[0]), k[1]))
    assert len(flat) == BULK - FOLDERED and {r["domain"] for r in flat} == {"bulk"}


def _epoch(iso_text: str) -> float:
    return dt.datetime.fromisoformat(iso_text.replace("Z", "+00:00")).timestamp()


async def test_memory_list_without_limit_pages_at_the_size_bound(vault: Vault) -> None:
    async with session(vault) as c:
        first = await call(c, "memory_list", limit=-1, tags_any=["bulk"])
        assert first["count"] < BULK and first["next_offset"] == first["count"]
        assert "size bound" in said_so(first)
        rows = await walk(c, "memory_list", "memories", limit=-1, tags_any=["bulk"])
        full = await walk(c, "memory_list", "memories", limit=-1, content_mode="full")
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == BULK
    # every memory of the vault, the huge ones included, comes back exactly once
    all_ids = [r["id"] for r in full]
    assert len(all_ids) == len(set(all_ids)) == BULK + len(huge_notes())


async def test_mem_recall_pages_every_chunk_once(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "mem_recall", "results", since="2024", output_format="structured", limit=500)
        compact = await call(c, "mem_recall", since="2024", limit=500)
    ids = [r["chunk_id"] for r in rows]
    assert len(ids) == len(set(ids)) == BULK  # one chunk per bulk note
    assert compact["count"] <= 500 and "next_offset" in compact


async def test_mem_recall_rows_leave_room_for_hints_that_echo_long_filters(vault: Vault) -> None:
    """Filters of the longest accepted size that also name nothing are echoed in hints; the
    chunks that do match must then take less of the page, not push the answer past the bound."""
    junk = lambda prefix: ",".join(f"{prefix}{i:04d}" for i in range(400))[:1990]  # noqa: E731
    async with session(vault) as c:
        for output in ("structured", "compact"):
            answer = await call(c, "mem_recall", since="2024", limit=500, output_format=output,
                                tag_filter="bulk," + junk("nosuchtag"), namespace="default," + junk("nons"),
                                scope="user," + junk("nosc"))
            assert answer["status"] == "ok" and answer["count"] > 0 and "next_offset" in answer, said_so(answer)
            assert "matched no memory" in said_so(answer)


async def test_list_domains_pages_every_folder_once(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "list_domains", "domains")
    names = [r["domain"] for r in rows]
    assert len(names) == len(set(names)) == 3 + FOLDERED  # "", bulk, huge and the folders
    assert next(r for r in rows if r["domain"] == "bulk")["active"] == BULK


async def test_memory_search_limit_50_is_bounded_and_says_more_matched(vault: Vault) -> None:
    async with session(vault) as c:
        found = await call(c, "memory_search", agent="tester", query="widgets", limit=50)
        clamped = await call(c, "memory_search", agent="tester", query="widgets", limit=500)
        recent = await call(c, "memory_search", agent="tester", limit=50)
    assert found["count"] == 50 and found["truncated"] is True
    assert clamped["count"] == 50 and "50" in clamped["message"]
    assert recent["count"] == 50 and recent["truncated"] is True


# -- big notes: memory_read pages the body ----------------------------------------------------


async def page_body(c: ToolClient, ref: str, **args: Any) -> tuple[str, dict[str, Any]]:
    pages: list[str] = []
    offset = 0
    first: dict[str, Any] = {}
    while True:
        a = await call(c, "memory_read", ref=ref, offset=offset, **args)
        first = first or a
        assert a["offset"] == offset
        pages.append(a["body"])
        if "next_offset" not in a:
            return "".join(pages), first
        assert a["next_offset"] == offset + len(a["body"]) > offset
        offset = a["next_offset"]


async def test_a_note_of_200000_lines_pages_to_its_exact_body(vault: Vault) -> None:
    expected = the_body(huge_notes()["huge/lines.md"])
    async with session(vault) as c:
        body, first = await page_body(c, "lines", max_chars=30_000)
    assert body == expected and first["body_chars"] == len(expected)
    assert first["est_tokens"] == -(-len(expected) // 4)


async def test_a_20_mb_note_pages_its_indexed_first_2_mib_and_says_so(vault: Vault) -> None:
    text = huge_notes()["huge/twenty.md"]
    expected = the_body(text)
    async with session(vault) as c:
        first = await call(c, "memory_read", ref="twenty", max_chars=30_000)
        # the last page, then the whole body a page at a time from a late offset
        tail_from = len(expected) - 70_000
        tail, _ = await page_body_from(c, "twenty", tail_from)
        early = await call(c, "memory_search", agent="tester", query="earlymarker")
        late = await call(c, "memory_search", agent="tester", query="latemarker")
        listed = await call(c, "list_by_domain", domain="huge", limit=200)
    assert first["body_chars"] == len(expected) and first["next_offset"] == len(first["body"])
    assert first["body"] == expected[: len(first["body"])]
    assert tail == expected[tail_from:]
    cut = " ".join(first["problems"])
    assert f"{len(text.encode()):,} bytes" in cut and f"{settings.current().max_note_bytes:,}" in cut
    assert f"paged up to the first {settings.current().max_note_bytes:,} bytes" in first["message"]
    assert "latemarker" not in expected
    assert [n["permalink"] for n in early["notes"]] == ["memory://huge/twenty"]
    assert late["status"] == "none"
    row = next(r for r in listed["results"] if r["uid"] == "twenty")
    assert row["est_tokens"] == first["est_tokens"] == -(-len(expected) // 4)


async def page_body_from(c: ToolClient, ref: str, offset: int) -> tuple[str, int]:
    pages: list[str] = []
    calls = 0
    while True:
        a = await call(c, "memory_read", ref=ref, offset=offset, max_chars=30_000)
        pages.append(a["body"])
        calls += 1
        if "next_offset" not in a:
            return "".join(pages), calls
        offset = a["next_offset"]


# -- huge records: every tool that returns them stays bounded and says what it cut ------------


HUGE_REFS = ("tags", "title", "meta", "heading")


@pytest.mark.parametrize("ref", HUGE_REFS)
async def test_memory_read_cuts_a_huge_record_and_names_the_cut(vault: Vault, ref: str) -> None:
    async with session(vault) as c:
        a = await call(c, "memory_read", ref=ref)
    field = {"tags": "tags", "title": "title", "meta": "metadata", "heading": "title"}[ref]
    total = {"tags": TAGS, "title": TITLE_CHARS, "meta": META_KEYS, "heading": TITLE_CHARS}[ref]
    assert a["truncated_fields"][field]["total"] == total
    assert field in a["message"] and a["uid"] == ref and a["etag"]
    assert a["body"] and ("next_offset" in a) == (ref == "heading")  # its body holds the heading


def cut_markers(row: dict[str, Any]) -> dict[str, Any]:
    cuts = row.get("truncated_fields")
    assert isinstance(cuts, dict), f"a cut row must say what it cut: {list(row)}"
    return cuts


async def test_list_by_domain_rows_of_huge_records_are_cut_and_marked(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "list_by_domain", "results", domain="huge")
        answer = await call(c, "list_by_domain", domain="huge", limit=200)
    by_uid = {r["uid"]: r for r in rows}
    assert set(by_uid) == {"twenty", "lines", "tags", "title", "meta", "heading"}
    assert cut_markers(by_uid["tags"])["tags"]["total"] == TAGS
    assert cut_markers(by_uid["title"])["title"]["total"] == TITLE_CHARS
    assert by_uid["title"]["title"].endswith("…")
    cut = [r["permalink"] for r in answer["results"] if "truncated_fields" in r]
    assert sorted(cut) == ["memory://huge/heading", "memory://huge/tags", "memory://huge/title"]
    assert "next_offset" not in answer  # the six rows fit one page once cut,
    # and the answer says which were cut and where the rest is
    assert said_so(answer) == cut_message(cut, settings.current().max_answer_chars)


async def test_memory_list_rows_of_huge_records_are_cut_and_marked(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "memory_list", "memories", limit=-1, date_to="2023")
        few = await walk(c, "memory_list", "memories", limit=-1, date_to="2023", fields=["title"])
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {"twenty", "lines", "tags", "title", "meta", "heading"}
    assert cut_markers(by_id["tags"])["tags"]["total"] == TAGS
    assert cut_markers(by_id["title"])["title"]["total"] == TITLE_CHARS
    assert cut_markers(by_id["meta"])["metadata"]["total"] == META_KEYS
    assert cut_markers({r["id"]: r for r in few}["title"])["title"]["total"] == TITLE_CHARS


async def test_mem_recall_chunks_of_huge_records_are_cut_and_marked(vault: Vault) -> None:
    async with session(vault) as c:
        rows = await walk(c, "mem_recall", "results", since="2023-06-03", until="2023-06-06",
                          output_format="structured", limit=500)
        text = await walk_compact(c, since="2023-06-03", until="2023-06-06")
    by_uid = {r["uid"]: r for r in rows}
    assert set(by_uid) == {"tags", "title", "meta", "heading"}
    assert cut_markers(by_uid["tags"])["tags"]["total"] == TAGS
    assert cut_markers(by_uid["heading"])["hierarchy"]["total"] == 1
    assert "see memory_read]" in text  # cut text is marked; every compact page stayed bounded (call)
    blocks = set(re.findall(r"^\[[^\]]+\] (memory://[^#\n]+)#\d+(?: \||$)", text, flags=re.MULTILINE))
    assert blocks == {f"memory://huge/{uid}" for uid in by_uid}  # every chunk's note, as in structured rows


async def walk_compact(c: ToolClient, **args: Any) -> str:
    texts: list[str] = []
    offset = 0
    while True:
        a = await call(c, "mem_recall", offset=offset, **args)
        texts.append(a["text"])
        if "next_offset" not in a:
            return "\n".join(texts)
        offset = a["next_offset"]


async def test_memory_search_digests_of_huge_records_are_cut_and_say_so(vault: Vault) -> None:
    async with session(vault) as c:
        tagged = await call(c, "memory_search", agent="tester", query="tag09999", limit=50)
        titled = await call(c, "memory_search", agent="tester", query="TTTTTTTT", limit=50)
        every = await call(c, "memory_search", agent="tester", query="note", limit=50)
    assert [n["permalink"] for n in tagged["notes"]] == ["memory://huge/tags"]
    assert "tags" in tagged["message"]
    assert [n["permalink"] for n in titled["notes"]] == ["memory://huge/title"]
    assert "title" in titled["message"] and len(titled["notes"][0]["title"]) < 1000
    assert every["status"] == "ok"

