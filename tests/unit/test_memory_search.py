"""memory_search (docs/tools.md, docs/ranking.md) through a real MCP client session on real files."""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from typing import Any

import pytest
from whoosh.lang.snowball.english import EnglishStemmer

from vault_mem.search.api import search_terms
from vault_mem.settings import Settings

pytestmark = pytest.mark.anyio

DIGEST_KEYS = {"permalink", "title", "kind", "paths", "tags", "updated_at", "excerpt", "score", "status", "etag"}


def note(title: str, body: str = "", updated: str = "2025-01-01T00:00:00Z", **fields: Any) -> str:
    lines = ["---", f"title: {json.dumps(title)}", f"updated: {updated}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join([*lines, "---", body]) + "\n"


async def search(c: Any, **args: Any) -> dict[str, Any]:
    return await c.call("memory_search", **({"agent": "test-agent"} | args))


def scores(answer: dict[str, Any]) -> dict[str, int]:
    return {n["permalink"].removeprefix("memory://"): n["score"] for n in answer["notes"]}


def order(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"].removeprefix("memory://") for n in answer["notes"]]


# --- scoring ---------------------------------------------------------------------------

SCORING = {
    "n/title.md": note("Kafka setup", "Nothing here.", "2025-01-01T00:00:00Z"),
    "n/body5.md": note("One", "kafka kafka kafka kafka kafka", "2025-01-03T00:00:00Z"),
    "n/body3.md": note("Two", "kafka, Kafka and KAFKA.", "2025-01-02T00:00:00Z"),
    "n/body1.md": note("Three", "a single kafka mention", "2025-01-04T00:00:00Z"),
    "kafka/perm.md": note("Four", "plain", "2025-01-01T00:00:00Z"),
    "n/tagged.md": note("Five", "plain", "2025-01-01T00:00:00Z", tags=["kafka"]),
    "n/both.md": note("Six", "kafka meets zookeeper", "2025-01-01T00:00:00Z"),
    "n/nothing.md": note("Seven", "unrelated text", "2025-01-05T00:00:00Z"),
}


def idf(notes: int, df: int) -> float:
    """BM25's idf, as docs/ranking.md states it."""
    return math.log(1 + (notes - df + 0.5) / (df + 0.5))


def ceiling(*rarities: float) -> float:
    """What a note holding every term exactly gets on top (docs/ranking.md): 48 x each term's rarity, + 10."""
    return 48 * sum(rarities) + 10


async def test_weights_cap_rarity_and_all_terms_bonus(make_vault, mcp_session):
    vault = make_vault(SCORING)
    kafka = idf(8, 7)  # 7 of the 8 notes hold "kafka" somewhere
    zookeeper = idf(8, 1)
    async with mcp_session(vault) as c:
        one = await search(c, query="kafka", limit=50)
        assert one["status"] == "ok" and one["truncated"] is False
        # one term: every match holds it exactly, so gets the +10 and the ceiling; title x6,
        # permalink x5, tags x4, body x1 (cap 3), each times the term's rarity
        top = 10 + ceiling(kafka)
        assert scores(one) == pytest.approx({
            "n/title": 6 * kafka + top, "kafka/perm": 5 * kafka + top, "n/tagged": 4 * kafka + top,
            "n/body5": 3 * kafka + top, "n/body3": 3 * kafka + top, "n/body1": kafka + top, "n/both": kafka + top,
        }, abs=1e-4)
        assert "n/nothing" not in scores(one)
        # a title hit outranks many body hits; the 3-hit cap makes 5 hits tie with 3, newest first
        assert order(one)[:5] == ["n/title", "kafka/perm", "n/tagged", "n/body5", "n/body3"]
        # equal score and equal updated: path ascending
        assert order(one)[5:] == ["n/body1", "n/both"]

        two = await search(c, query="kafka zookeeper", limit=50)
        got = scores(two)
        assert got["n/both"] == pytest.approx(kafka + zookeeper + 10 + ceiling(kafka, zookeeper), abs=1e-4)
        assert got["n/title"] == pytest.approx(6 * kafka, abs=1e-4)  # one term of two: no bonus
        assert got["n/body5"] == pytest.approx(3 * kafka, abs=1e-4)
        assert order(two)[:4] == ["n/both", "n/title", "kafka/perm", "n/tagged"]


async def test_every_field_is_searched_case_insensitively_as_substrings(make_vault, mcp_session):
    vault = make_vault({
        "a.md": note("ÜBERSICHT of Things", "x"),
        "deep/ConfigLoader.md": note("Cfg", "x"),
        "t.md": note("T", "x", tags=["Frontend/ReactHooks"]),
        "b.md": note("B", "the middleware layer"),
    })
    async with mcp_session(vault) as c:
        assert order(await search(c, query="übersicht")) == ["a"]
        assert order(await search(c, query="configload")) == ["deep/ConfigLoader"]
        assert order(await search(c, query="hooks")) == ["t"]
        assert order(await search(c, query="DLEWAR")) == ["b"]  # inside a word: no stemming, substrings
        assert (await search(c, query="zzzqqq"))["status"] == "none"


async def test_stop_words_and_short_terms_dropped_unless_nothing_else(make_vault, mcp_session):
    vault = make_vault({
        "k.md": note("K", "kafka broker"),
        "o.md": note("O", "other words in here"),
        "s.md": note("S", "an ox"),
    })
    assert search_terms("the and with kafka", Settings())[1] == ["the", "and", "with"]  # stop words
    async with mcp_session(vault) as c:
        kafka = await search(c, query="kafka")
        with_noise = await search(c, query="the kafka of it")
        alone = idf(3, 1) + 10 + ceiling(idf(3, 1))
        assert scores(with_noise) == scores(kafka) == {"k": pytest.approx(alone, abs=1e-4)}
        assert "the" in with_noise["message"] and "of" in with_noise["message"]
        # only stop words / short terms: they are all kept
        the = await search(c, query="the")
        assert set(scores(the)) == {"o"}  # "oTHEr"
        assert set(scores(await search(c, query="ox"))) == {"s"}
        both = await search(c, query="an ox")
        assert scores(both) == {"s": pytest.approx(2 * idf(3, 1) + 10 + ceiling(idf(3, 1), idf(3, 1)), abs=1e-4)}
        nothing = await search(c, query="?! ...")
        assert nothing["status"] == "none" and "query" in nothing["message"]


async def test_recent_notes_equal_a_full_ranking_over_segments_ties_and_deletions(make_vault, mcp_session):
    """No query: the newest come from each segment's cached date order (``columns.newest_docs``);
    across several segments, deleted documents, many notes sharing a date, a tag filter and
    ``since``, the page must be what ranking every note would give."""
    from conftest import churn

    rng = random.Random(11)
    days = [f"2025-0{m}-0{d}T00:00:00Z" for m in (1, 2, 3) for d in (1, 2)]  # 6 dates for 120 notes
    meta: dict[str, tuple[str, str]] = {}  # path -> (updated, tag)

    def text(rel: str) -> str:
        updated, tag = meta[rel]
        return note(rel, "words", updated, tags=[tag])

    for i in range(120):
        meta[f"d{i % 4}/n{i:03d}.md"] = (rng.choice(days), rng.choice(["even", "odd"]))
    vault = make_vault({rel: text(rel) for rel in meta})
    # edits: a deletion in the built segment, a new segment each
    churn(vault.index, meta, rng, 15, 10, lambda rel: (rng.choice(days), meta[rel][1]), text)

    def expected(limit: int, tag: str | None = None, since: str | None = None) -> tuple[list[str], bool]:
        ranked = sorted((rel for rel, (updated, t) in meta.items()
                         if (tag is None or t == tag) and (since is None or updated >= since)),
                        key=lambda rel: (-int(meta[rel][0][:10].replace("-", "")), rel))
        return [rel.removesuffix(".md") for rel in ranked[:limit]], len(ranked) > limit

    async with mcp_session(vault) as c:
        for limit in (1, 5, 17, 50):
            for tag in (None, "even"):
                for since in (None, "2025-02-02T00:00:00Z"):
                    args: dict[str, Any] = {"limit": limit}
                    if tag:
                        args["tag"] = tag
                    if since:
                        args["since"] = since
                    answer = await search(c, **args)
                    assert (order(answer), answer["truncated"]) == expected(limit, tag, since), args


async def test_no_query_lists_most_recently_updated(make_vault, mcp_session):
    vault = make_vault({
        "b.md": note("B", "x", "2025-03-01T00:00:00Z"),
        "a.md": note("A", "x", "2025-03-01T00:00:00Z"),
        "old.md": note("Old", "x", "2024-01-01T00:00:00Z"),
        "new.md": note("New", "x", "2025-05-01T10:00:00+02:00"),
        "fact.md": note("F", "x", "2025-02-01T00:00:00Z", type="fact"),
    })
    async with mcp_session(vault) as c:
        recent = await search(c)
        assert order(recent) == ["new", "a", "b", "fact", "old"]
        assert all(n["score"] == 0 for n in recent["notes"]) and recent["truncated"] is False
        assert order(await search(c, query="   ")) == order(recent)
        page = await search(c, limit=2)
        assert order(page) == ["new", "a"] and page["truncated"] is True and page["count"] == 2
        assert order(await search(c, kind="fact")) == ["fact"]
        assert order(await search(c, since="2025-02-01T00:00:00Z")) == ["new", "a", "b", "fact"]


async def test_digest_shape_never_carries_a_body(make_vault, mcp_session):
    body = "Secret body text. " * 50
    vault = make_vault({"d/x.md": note("X", body, "2025-01-01T10:20:30Z", type="decision",
                                        tags=["Ops/Deploy"], paths=["src/app.py"])})
    async with mcp_session(vault) as c:
        answer = await search(c, query="secret")
        assert set(answer) == {"status", "count", "notes", "truncated", "inbox", "inbox_more"}
        (digest,) = answer["notes"]
        assert set(digest) == DIGEST_KEYS
        assert digest["permalink"] == "memory://d/x" and digest["kind"] == "decision"
        assert digest["paths"] == ["src/app.py"] and digest["tags"] == ["ops/deploy"]
        assert digest["updated_at"] == "2025-01-01T10:20:30+00:00" and digest["status"] == "active"
        assert digest["etag"] and len(digest["excerpt"]) <= 160 + 6
        assert body.strip() not in json.dumps(answer)


# --- excerpts --------------------------------------------------------------------------

async def test_excerpt_centred_on_first_match_with_markers_and_no_headings(make_vault, mcp_session):
    before = " ".join(f"before{i}" for i in range(40))
    after = " ".join(f"after{i}" for i in range(40))
    vault = make_vault({
        "mid.md": note("Mid", f"# Heading mentions NEEDLE\n\n{before}\n\nthe   Needle\there {after}\n"
                              "## Tail heading\n"),
        "start.md": note("Start", f"needle first {after}"),
        "short.md": note("Short", "# Title line\n\nA   short\n\n  needle   text.\n"),
        "none.md": note("Nomatch", f"{before} {after}"),
    })
    async with mcp_session(vault) as c:
        found = {n["permalink"]: n["excerpt"] for n in (await search(c, query="needle", limit=50))["notes"]}
        mid = found["memory://mid"]
        assert mid.startswith("...") and mid.endswith("...")
        core = mid[3:-3]
        assert len(core) <= 160 and "Needle here" in core  # whitespace collapsed, case kept
        assert "Heading" not in mid and "NEEDLE" not in mid and "Tail heading" not in mid
        at = core.index("Needle")
        assert abs(at - (len(core) - at - len("Needle"))) <= 40  # roughly centred
        start = found["memory://start"]
        assert start.startswith("needle first") and start.endswith("...") and len(start) <= 163
        assert found["memory://short"] == "A short needle text."

        recent = {n["permalink"]: n["excerpt"] for n in (await search(c, limit=50))["notes"]}
        assert recent["memory://none"].startswith("before0 before1") and recent["memory://none"].endswith("...")
        assert not recent["memory://none"].startswith("...") and len(recent["memory://none"]) <= 163


async def test_an_excerpt_is_taken_from_the_file_as_it_is_now(make_vault, mcp_session):
    """The rows' bodies are kept while their file is unchanged (same inode, size and mtime) once it
    has been so for a few seconds; any save (before the index has seen it) gives the next excerpt
    the new text: one of another size, one of the same size in place, one by a rename, and one of
    the same size within the same tick of the clock (the same mtime)."""
    vault = make_vault({"n.md": note("N", "the marmot sleeps in winter")})
    path = vault.root / "n.md"
    hour_ago = path.stat().st_mtime_ns - 3600 * 10**9

    def save(text: str, mtime_ns: int | None, rename: bool = False) -> None:
        if rename:
            fresh = path.with_name("n.md.tmp")
            fresh.write_text(note("N", text), encoding="utf-8")
            os.replace(fresh, path)  # an editor's save: another file under the name
        else:
            with path.open("r+", encoding="utf-8") as f:  # in place: the same file
                f.write(note("N", text))
                f.truncate()
        if mtime_ns is not None:
            os.utime(path, ns=(mtime_ns, mtime_ns))

    async with mcp_session(vault) as c:
        async def excerpt() -> str:
            return (await search(c, query="marmot"))["notes"][0]["excerpt"]

        save("the marmot sleeps in winter", hour_ago)  # settled: its body is kept
        assert await excerpt() == await excerpt() == "the marmot sleeps in winter"
        save("the marmot wakes in spring, hungry", hour_ago)  # another size
        assert await excerpt() == "the marmot wakes in spring, hungry"
        save("the marmot waits in spring, hungry", hour_ago + 1)  # the same size, another mtime
        assert await excerpt() == "the marmot waits in spring, hungry"
        save("the marmot dines in spring, hungry", hour_ago, rename=True)  # another inode
        assert await excerpt() == "the marmot dines in spring, hungry"
        now = time.time_ns()
        save("the marmot naps in summer, hungry!", now)  # not settled: never kept
        assert await excerpt() == "the marmot naps in summer, hungry!"
        save("the marmot lies in summer, hungry!", now)  # the same size and the same mtime
        assert await excerpt() == "the marmot lies in summer, hungry!"


# --- filters ---------------------------------------------------------------------------

KINDS = {
    "f.md": note("F", "alpha", type="fact"),
    "r.md": note("R", "alpha", type="recipe"),
    "n.md": note("N", "alpha"),
}


async def test_kind_known_present_and_invalid(make_vault, mcp_session):
    vault = make_vault(KINDS)
    async with mcp_session(vault) as c:
        assert order(await search(c, kind="fact")) == ["f"]
        assert order(await search(c, kind="FACT", query="alpha")) == ["f"]
        assert order(await search(c, kind="recipe")) == ["r"]  # not a known type, but present
        lesson = await search(c, kind="lesson")  # known, absent: valid, nothing found
        assert lesson == {"status": "none", "count": 0, "notes": [], "truncated": False, "inbox": [], "inbox_more": 0,
                          "hints": ["kind: no note is of kind 'lesson' (kinds present: fact, note, recipe)"]}
        bad = await search(c, kind="bogus")
        assert bad["status"] == "invalid" and bad["message"].startswith("kind")
        for valid in ("note", "fact", "lesson", "anti_pattern", "reasoning", "recipe"):
            assert valid in bad["message"]


async def test_tag_filter_including_nested_parent(make_vault, mcp_session):
    vault = make_vault({
        "api.md": note("Api", "alpha", tags=["proj/api"]),
        "proj.md": note("Proj", "alpha", tags=["proj"]),
        "other.md": note("Other", "alpha", tags=["api"]),
        "inline.md": note("Inline", "alpha with #proj/web inline"),
    })
    async with mcp_session(vault) as c:
        assert sorted(order(await search(c, tag="proj"))) == ["api", "inline", "proj"]
        assert order(await search(c, tag="#Proj/API")) == ["api"]
        assert sorted(order(await search(c, tag="api", query="alpha"))) == ["other"]
        assert (await search(c, tag="pro"))["status"] == "none"  # tags are whole, not substrings


PATHS = {
    "eq.md": note("Eq", "alpha", paths=["src/a"]),
    "ab.md": note("Ab", "alpha", paths=["src/ab"]),
    "child.md": note("Child", "alpha", paths=["src/a/b.py"]),
    "sibling.md": note("Sibling", "alpha", paths=["src/a/c.py"]),
    "root.md": note("Root", "alpha", paths=["src"]),
    "lib.md": note("Lib", "alpha", paths=["lib/x", "docs/readme.md"]),
    "multi.md": note("Multi", "alpha", paths=["other/z", "src/a/b.py/inner"]),
    "none.md": note("None", "alpha"),
}


@pytest.mark.parametrize(("path", "expected"), [
    ("src/a", {"eq", "child", "sibling", "root", "multi"}),
    ("src/a/", {"eq", "child", "sibling", "root", "multi"}),
    ("src/a/b.py", {"eq", "child", "root", "multi"}),  # the note's path as a prefix of the query
    ("src/ab", {"ab", "root"}),  # not src/a: prefixes only on '/' boundaries
    ("src/abc", {"root"}),
    ("docs", {"lib"}),
    ("nowhere/at/all", set()),
])
async def test_path_overlap_both_directions(make_vault, mcp_session, path, expected):
    vault = make_vault(PATHS)
    async with mcp_session(vault) as c:
        for extra in ({}, {"query": "alpha"}):
            answer = await search(c, path=path, limit=50, **extra)
            assert set(order(answer)) == expected
            assert answer["status"] == ("ok" if expected else "none")


async def test_path_overlap_respects_limit_and_truncated(make_vault, mcp_session):
    vault = make_vault(PATHS)
    async with mcp_session(vault) as c:
        first = await search(c, path="src/a/b.py", limit=2)
        assert first["count"] == 2 and first["truncated"] is True
        every = await search(c, path="src/a/b.py", limit=4)
        assert every["count"] == 4 and every["truncated"] is False
        assert order(every)[:2] == order(first)


SINCE = {
    "jan.md": note("Jan", "x", "2025-01-01T00:00:00Z"),
    "jun.md": note("Jun", "x", "2025-06-01T12:00:00Z"),
}


@pytest.mark.parametrize(("since", "expected"), [
    ("2025-06-01T12:00:00Z", {"jun"}),  # at or after
    ("2025-06-01t12:00:00z", {"jun"}),
    ("2025-06-01T13:00:00+01:00", {"jun"}),
    ("2025-06-01 12:00:00+00:00", {"jun"}),
    ("2025-06-01T12:00:00.5Z", set()),
    ("2025-06-01T11:59:59.999Z", {"jun"}),
    ("2024-12-31T19:00:00-05:00", {"jun", "jan"}),
    ("2024-12-31T19:00:01-05:00", {"jun"}),
    ("2025-01-01T00:00:01Z", {"jun"}),
])
async def test_since_valid_forms(make_vault, mcp_session, since, expected):
    vault = make_vault(SINCE)
    async with mcp_session(vault) as c:
        assert set(order(await search(c, since=since))) == expected


@pytest.mark.parametrize("since", ["2025-06-01", "2025-06-01T12:00:00", "2025-06-01T12:00Z", "yesterday",
                                   "2025-13-01T00:00:00Z", "2025-06-01T12:00:00+0100", "1717243200", "7d"])
async def test_since_invalid_forms(make_vault, mcp_session, since):
    vault = make_vault(SINCE)
    async with mcp_session(vault) as c:
        bad = await search(c, since=since)
        assert bad["status"] == "invalid" and bad["message"].startswith("since") and "RFC 3339" in bad["message"]


async def test_filters_combine_with_and(make_vault, mcp_session):
    vault = make_vault({
        "hit.md": note("Hit", "alpha", "2025-06-01T00:00:00Z", type="fact", tags=["ops"], paths=["src/a"]),
        "kind.md": note("Kind", "alpha", "2025-06-01T00:00:00Z", type="lesson", tags=["ops"], paths=["src/a"]),
        "tag.md": note("Tag", "alpha", "2025-06-01T00:00:00Z", type="fact", tags=["dev"], paths=["src/a"]),
        "path.md": note("Path", "alpha", "2025-06-01T00:00:00Z", type="fact", tags=["ops"], paths=["lib"]),
        "old.md": note("Old", "alpha", "2024-06-01T00:00:00Z", type="fact", tags=["ops"], paths=["src/a"]),
        "text.md": note("Text", "beta", "2025-06-01T00:00:00Z", type="fact", tags=["ops"], paths=["src/a"]),
    })
    async with mcp_session(vault) as c:
        both = dict(kind="fact", tag="ops", path="src", since="2025-01-01T00:00:00Z")
        assert order(await search(c, query="alpha", **both)) == ["hit"]
        assert set(order(await search(c, **both))) == {"hit", "text"}
        empty = await search(c, query="alpha", kind="fact", tag="dev", path="lib")
        assert empty == {"status": "none", "count": 0, "notes": [], "truncated": False, "inbox": [], "inbox_more": 0,
                         "hints": [
            "the query matches 5 notes; kind 'fact' leaves 4, tag 'dev' leaves 1, path 'lib' leaves 1; "
            "none passes every filter"]}


# --- limit, agent and bad input ---------------------------------------------------------

async def test_limit_default_clamp_and_truncated(make_vault, mcp_session):
    vault = make_vault({f"n{i:02}.md": note(f"N{i}", "alpha") for i in range(55)})
    async with mcp_session(vault) as c:
        default = await search(c, query="alpha")
        assert default["count"] == 10 and default["truncated"] is True and "message" not in default
        clamped = await search(c, query="alpha", limit=51)
        assert clamped["status"] == "ok" and clamped["count"] == 50 and clamped["truncated"] is True
        assert "limit" in clamped["message"] and "50" in clamped["message"]
        five = await search(c, query="alpha", limit="5")
        assert five["count"] == 5
        assert order(five) == [f"n{i:02}" for i in range(5)]  # equal score and updated: path ascending


@pytest.mark.parametrize("limit", [0, -1, "ten", 2.5, True])
async def test_limit_invalid(make_vault, mcp_session, limit):
    vault = make_vault(SINCE)
    async with mcp_session(vault) as c:
        bad = await search(c, limit=limit)
        assert bad["status"] == "invalid" and "limit" in bad["message"]


async def test_agent_required_and_suggested(make_vault, mcp_session):
    vault = make_vault(SINCE)
    async with mcp_session(vault) as c:
        spaced = await c.call("memory_search", agent="Claude Code", query="x")
        assert spaced["status"] == "invalid" and "agent" in spaced["message"] and "claude-code" in spaced["message"]
        missing = await c.call("memory_search", query="x")
        assert missing["status"] == "invalid" and "agent" in missing["message"]
        for bad in ("", "a" * 65, "bad/agent"):
            assert (await c.call("memory_search", agent=bad))["status"] == "invalid"
        assert (await c.call("memory_search", agent="claude_code.v2-1"))["status"] == "ok"


@pytest.mark.parametrize("bad", [{"bogus": 1}, {"query": ["a", "b"]}, {"tag": "#"}, {"path": "/"},
                                 {"query": " ".join(f"word{i}" for i in range(40))}, {"kind": 5.5}])
async def test_bad_input_is_invalid_and_names_the_parameter(make_vault, mcp_session, bad):
    vault = make_vault(SINCE)
    async with mcp_session(vault) as c:
        answer = await search(c, **bad)
        assert answer["status"] == "invalid"
        assert next(iter(bad)) in answer["message"]


# --- the size bound --------------------------------------------------------------------

async def test_huge_titles_and_tags_are_cut_and_said(make_vault, mcp_session):
    notes = {
        f"big{i:02}.md": note("Huge " + "t" * 5000, "alpha", tags=[f"tag{i}x{j:03}" for j in range(300)],
                              paths=[f"src/p{j:03}" for j in range(200)])
        for i in range(30)
    }
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        answer = await search(c, query="alpha", limit=50)
        assert len(json.dumps(answer, ensure_ascii=False)) < 40_000
        assert answer["status"] == "ok" and answer["truncated"] is True
        assert 0 < answer["count"] < 30 and answer["count"] == len(answer["notes"])
        assert "size bound" in answer["message"] and "tags of memory://big00" in answer["message"]
        assert "title of memory://big00" in answer["message"] and "paths of memory://big00" in answer["message"]
        first = answer["notes"][0]
        assert first["title"].startswith("Huge ttt") and first["title"].endswith(" chars]")
        assert 0 < len(first["tags"]) < 300 and 0 < len(first["paths"]) < 200


# --- cross-check against a plain scan ------------------------------------------------

VOCAB = ["kafka", "broker", "Retry", "timeout", "cache", "Postgres", "vacuum", "index", "lexer",
         "parser", "deploy", "rollback", "canary", "budget", "latency", "socket", "Queue", "worker"]


def _generated_vault(rng: random.Random) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    files: dict[str, str] = {}
    fields: dict[str, dict[str, str]] = {}
    for i in range(40):
        folder = rng.choice(["ops", "dev/api", "notes", "research/x1"])
        stem = f"{rng.choice(VOCAB)}-{i:02}"
        title = " ".join(rng.sample(VOCAB, rng.randint(1, 3)))
        tags = [t.lower() for t in rng.sample(VOCAB, rng.randint(0, 2))]
        body = " ".join(rng.choice(VOCAB) + rng.choice(["", "s", "ing", "_x"]) for _ in range(rng.randint(0, 30)))
        rel = f"{folder}/{stem}.md"
        files[rel] = note(title, body, f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z", tags=tags)
        fields[rel[:-3]] = {"title": title, "perm": rel[:-3], "tagtext": " ".join(tags), "body": body}
    return files, fields


def _stem(term: str) -> str | None:
    stem = EnglishStemmer().stem(term)
    return stem if stem != term and len(stem) >= 3 else None


def _hits(text: str, term: str, stem: str | None) -> tuple[int, int]:
    """(occurrences of term, occurrences of stem outside them) in a plain lower-cased text."""
    text = text.lower()
    spans = [(m.start(), m.end()) for m in re.finditer(re.escape(term), text)]
    if not stem:
        return len(spans), 0
    alone = [m for m in re.finditer(re.escape(stem), text)
             if not any(a <= m.start() and m.end() <= b for a, b in spans)]
    return len(spans), len(alone)


def _plain_scores(fields: dict[str, dict[str, str]], terms: list[str]) -> dict[str, float]:
    """The score of docs/ranking.md computed by scanning every note's text: each form's rarity x
    its weighted hits, +10 for every term, + the query's ceiling for every term exactly."""
    weights = {"title": 6, "perm": 5, "tagtext": 4, "body": 1}
    totals: dict[str, float] = {}
    matched: dict[str, int] = {}
    exactly: dict[str, int] = {}
    ceiling = 10.0
    for term in terms:
        stem = _stem(term)
        exact_hits: dict[str, float] = {}
        stem_hits: dict[str, float] = {}
        for path, note_fields in fields.items():
            for field, weight in weights.items():
                exact, alone = _hits(note_fields[field], term, stem)
                counted = min(exact, 3)
                if exact:
                    exact_hits[path] = exact_hits.get(path, 0) + weight * counted
                if alone:
                    stem_hits[path] = stem_hits.get(path, 0) + weight * 0.5 * min(alone, 3 - counted)
        exact_rarity = idf(len(fields), len(exact_hits)) if exact_hits else 0
        stem_rarity = idf(len(fields), len(stem_hits)) if stem_hits else 0
        ceiling += 48 * max(exact_rarity, stem_rarity / 2)
        for path in exact_hits.keys() | stem_hits.keys():
            totals[path] = (totals.get(path, 0.0) + exact_rarity * exact_hits.get(path, 0)
                            + stem_rarity * stem_hits.get(path, 0))
            matched[path] = matched.get(path, 0) + 1
            exactly[path] = exactly.get(path, 0) + (path in exact_hits)
    return {p: t + (10 if matched[p] == len(terms) else 0) + (ceiling if exactly[p] == len(terms) else 0)
            for p, t in totals.items()}


async def test_plain_scan_cross_check(make_vault, mcp_session):
    rng = random.Random(20250401)
    files, fields = _generated_vault(rng)
    vault = make_vault(files)
    needles = ["kafka", "ache", "RETR", "ing_x", "ueu", "dex", "rollbacks", "api", "sear", "x1",
               "can", "zzzz"]
    needles += [w.lower()[i:i + 3] for w in rng.sample(VOCAB, 6) for i in (1,)]
    needles += ["deploying", "latencies", "workers", "indexing", "sockets", "retries"]  # stems differ
    async with mcp_session(vault) as c:
        for needle in needles:
            term = needle.lower()
            expected = _plain_scores(fields, [term])
            answer = await search(c, query=needle, limit=50)
            assert set(order(answer)) == set(expected), needle
            assert answer["truncated"] is False
            assert scores(answer) == pytest.approx(expected, abs=1e-3), needle
        for pair in (["kafka", "timeout"], ["ache", "ing_x"], ["ueu", "zzzz"], ["deploying", "workers"]):
            answer = await search(c, query=" ".join(pair), limit=50)
            expected = _plain_scores(fields, pair)
            assert scores(answer) == pytest.approx(expected, abs=1e-3), pair
            assert [n["score"] for n in answer["notes"]] == sorted(n["score"] for n in answer["notes"])[::-1]
