"""memory_search's order (docs/ranking.md): rarity, word forms, exact before stem, then newest and path.

Each rule through a real MCP client session on real files; plus the shape of the relevance
set that bench/relevance_bench.py measures (the bench prints recall, no test pins it).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from vault_mem.search.build import sync
from vault_mem.search.segments import segments
from vault_mem.search.substring import form_hit_counts
from vault_mem.search.whoosh.files import _decoded_postings, _matcher_postings
from vault_mem.vault.walk import walk_vault

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent.parent
VAULTS = {"sample_vault": HERE.parent / "sample_vault", "chat_vault": HERE / "relevance" / "chat_vault"}


def note(title: str, body: str, updated: str, **fields: Any) -> str:
    lines = ["---", f"title: {json.dumps(title)}", f"updated: {updated}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join([*lines, "---", body]) + "\n"


def idf(notes: int, df: int) -> float:
    return math.log(1 + (notes - df + 0.5) / (df + 0.5))


async def search(c: Any, query: str, **args: Any) -> dict[str, Any]:
    return await c.call("memory_search", agent="test-agent", query=query, **({"limit": 50} | args))


def order(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"].removeprefix("memory://") for n in answer["notes"]]


def scores(answer: dict[str, Any]) -> dict[str, float]:
    return {n["permalink"].removeprefix("memory://"): n["score"] for n in answer["notes"]}


async def test_a_rare_term_beats_a_newer_note_with_a_common_one(make_vault, mcp_session):
    chatter = {f"chat/turn{i:02}.md": note(f"Turn {i}", f"Caroline said hello, turn {i}.",
                                           f"2025-05-{i + 1:02}T10:00:00Z") for i in range(8)}
    vault = make_vault(chatter | {
        "chat/old.md": note("Turn old", "She went to the adoption agency on Friday.", "2025-01-01T10:00:00Z"),
    })
    async with mcp_session(vault) as c:
        answer = await search(c, "caroline adoption")
        # every note matches one term of two: without rarity the newest would lead
        assert order(answer)[0] == "chat/old"
        assert scores(answer)["chat/old"] == pytest.approx(idf(9, 1), abs=1e-4)
        assert scores(answer)["chat/turn07"] == pytest.approx(idf(9, 8), abs=1e-4)
        assert order(answer)[1:] == [f"chat/turn{i:02}" for i in reversed(range(8))]  # then newest first


async def test_the_note_holding_the_questions_rare_word_comes_first(make_vault, mcp_session):
    # Every turn's title names its speaker; newer turns repeat the question's common words.
    notes = {f"c/{i:02}.md": note(f"Caroline, turn {i}", f"My reading group meets again, week {i}.",
                                   f"2025-06-{i + 1:02}T09:00:00Z") for i in range(12)}
    notes["c/answer.md"] = note("Caroline, turn 3", "I went to the LGBTQ meetup yesterday, 7 May.",
                                "2025-05-08T09:00:00Z")
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        answer = await search(c, "When did Caroline go to the LGBTQ support group?")
        assert order(answer)[0] == "c/answer"
        assert "LGBTQ meetup" in answer["notes"][0]["excerpt"]


async def test_a_stem_finds_its_word(make_vault, mcp_session):
    vault = make_vault({
        "n1.md": note("One", "She runs the support group.", "2025-01-01T00:00:00Z"),
        "n2.md": note("Two", "Her studies of coral bleaching.", "2025-01-01T00:00:00Z"),
        "n3.md": note("Three", "Nothing to see.", "2025-01-01T00:00:00Z"),
    })
    async with mcp_session(vault) as c:
        supported = await search(c, "supported")  # stem "support": not a substring of the query
        assert order(supported) == ["n1"]
        assert supported["notes"][0]["score"] == pytest.approx(idf(3, 1) * 0.5 + 10, abs=1e-4)
        assert "support group" in supported["notes"][0]["excerpt"]
        assert order(await search(c, "studying")) == ["n2"]  # stem "studi"
        assert (await search(c, "supporters"))["status"] == "ok"
        assert (await search(c, "bleached"))["status"] == "ok"  # stem "bleach"


async def test_an_exact_hit_beats_a_stem_only_hit(make_vault, mcp_session):
    vault = make_vault({
        "exact.md": note("A", "She supported the plan.", "2025-01-01T00:00:00Z"),
        "stem.md": note("B", "Support for the plan.", "2025-06-01T00:00:00Z"),  # newer, stem only
        "stems.md": note("C", "support, support, support, support", "2025-06-01T00:00:00Z"),
        "mixed.md": note("D", "supported supported support support", "2025-01-01T00:00:00Z"),
        "full.md": note("E", "supported supported supported support", "2025-01-01T00:00:00Z"),
        "none.md": note("F", "Nothing.", "2025-06-01T00:00:00Z"),
    })
    exact_rarity = idf(6, 3)  # full, mixed and exact hold "supported"
    stem_rarity = idf(6, 4)  # stem, stems, mixed and full hold "support" outside it
    ceiling = 48 * max(exact_rarity, stem_rarity / 2) + 10  # for holding every term exactly
    async with mcp_session(vault) as c:
        answer = await search(c, "supported")
        assert scores(answer) == pytest.approx({
            "full": 3 * exact_rarity + 10 + ceiling,  # at most 3 hits a field, exact ones first
            "mixed": 2 * exact_rarity + 0.5 * stem_rarity + 10 + ceiling,  # 2 exact, 1 of the stem's 2
            "exact": exact_rarity + 10 + ceiling,
            "stems": 1.5 * stem_rarity + 10,  # 3 stem-only hits, each 0.5, and no ceiling
            "stem": 0.5 * stem_rarity + 10,
        }, abs=1e-4)
        assert order(answer) == ["full", "mixed", "exact", "stems", "stem"]
        assert order(await search(c, "plan")) == ["stem", "exact"]  # both exact: newest first


async def test_a_rare_exact_word_beats_any_number_of_stem_only_title_hits(make_vault, mcp_session):
    # A hub of plugin notes whose titles, permalinks, tags and bodies hold the stems of rare
    # words ("Colorful Picker" for "colorizing"), each hit capped, all newer than the two notes
    # that say the rare words themselves.
    rng = random.Random(18)
    forms = {"color": ["Color", "Colored", "Colorful", "Colors"], "visual": ["Visual", "Visuals"],
             "utter": ["Utter", "Utters"]}
    notes = {}
    for stem, titles in forms.items():
        for i in range(15):
            title = f"{rng.choice(titles)} {rng.choice(['Picker', 'Tools', 'Blocks'])} {stem} {i}"
            notes[f"plugins/{title}.md"] = note(title, f"{' '.join(titles)} {stem} " * 3,
                                                f"2025-06-{i + 1:02}T00:00:00Z", tags=[stem, f"{stem}s"])
    notes["topics/themes.md"] = note("Themes", "One option is colorizing the output.", "2020-01-01T00:00:00Z")
    notes["topics/charts.md"] = note("Charts", "It visualizes every series; utterances too.", "2020-01-01T00:00:00Z")
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        for word, holder in (("colorizing", "topics/themes"), ("visualizes", "topics/charts"),
                             ("utterances", "topics/charts")):
            answer = await search(c, word)
            assert order(answer)[0] == holder, (word, order(answer)[:3])
            by_note = scores(answer)
            assert all(by_note[holder] > s for path, s in by_note.items() if path != holder), word
            assert answer["count"] > 10  # the stem-only notes are still results, after it


async def test_a_note_holding_every_term_exactly_beats_one_holding_some_only_by_stem(make_vault, mcp_session):
    fillers = {f"f/{i:02}.md": note(f"Filler {i}", f"Weather report {i}.", "2025-01-01T00:00:00Z")
               for i in range(10)}
    vault = make_vault(fillers | {
        # every hit capped on the rarer term, in every field, and the other term by its stem
        "heavy.md": note("Lighthouse lighthouse lighthouse", "lighthouse " * 3 + "support " * 3,
                         "2025-06-01T00:00:00Z", tags=["lighthouse"]),
        "plain.md": note("Keeper", "The lighthouse keeper supported the plan.", "2020-01-01T00:00:00Z"),
    })
    async with mcp_session(vault) as c:
        answer = await search(c, "lighthouse supported")
        assert order(answer) == ["plain", "heavy"]
        assert scores(answer)["plain"] > scores(answer)["heavy"]


async def test_ties_break_by_newest_then_path(make_vault, mcp_session):
    body = "The retry budget is three attempts."
    vault = make_vault({
        "b.md": note("Same", body, "2025-03-01T00:00:00Z"),
        "a.md": note("Same", body, "2025-03-01T00:00:00Z"),
        "c.md": note("Same", body, "2025-04-01T00:00:00Z"),
        "d.md": note("Same", body, "2024-04-01T00:00:00Z"),
        "x/top.md": note("Retry budget", body, "2020-01-01T00:00:00Z"),  # a title hit: best, however old
    })
    async with mcp_session(vault) as c:
        answer = await search(c, "retry budget")
        assert order(answer) == ["x/top", "c", "a", "b", "d"]
        tied = [n["score"] for n in answer["notes"][1:]]
        assert len(set(tied)) == 1 and tied[0] < answer["notes"][0]["score"]
        assert order(await search(c, "retry budget", limit=2)) == ["x/top", "c"]


async def test_rarity_follows_edits_to_the_vault(make_vault, mcp_session, tmp_path):
    vault = make_vault({
        "rare.md": note("One", "lighthouse keeper", "2025-01-01T00:00:00Z"),
        "common.md": note("Two", "keeper of keys", "2025-02-01T00:00:00Z"),
    })
    async with mcp_session(vault) as c:
        before = scores(await search(c, "lighthouse"))["rare"]
        for i in range(4):
            written = await c.call("memory_write", agent="test-agent", title=f"Beacon {i}",
                                   content="lighthouse again", domain="more")
            assert written["status"] == "ok", written
        after = await search(c, "lighthouse")
        assert after["count"] == 5
        # more notes hold the word now: each of its hits weighs less (and so does the ceiling)
        assert scores(after)["rare"] == pytest.approx(49 * idf(6, 5) + 20, abs=1e-4) and scores(after)["rare"] < before


# --- the relevance set ----------------------------------------------------------------

def test_the_relevance_set_is_well_formed():
    questions = yaml.safe_load((HERE / "relevance" / "questions.yaml").read_text(encoding="utf-8"))
    assert len(questions) >= 150
    assert len({q["question"] for q in questions}) == len(questions), "a question is listed twice"
    indexed = {name: set(walk_vault(root).files) for name, root in VAULTS.items()}
    assert len(indexed["chat_vault"]) >= 100
    for q in questions:
        assert set(q) == {"vault", "question", "answers"}, q
        assert q["vault"] in VAULTS and q["question"].strip() and q["answers"], q
        for answer in q["answers"]:
            assert answer in indexed[q["vault"]], f"{answer!r} is not an indexed note of {q['vault']}"
    assert {q["vault"] for q in questions} == set(VAULTS)


def test_the_paraphrase_set_is_well_formed_with_a_fixed_balanced_split():
    questions = yaml.safe_load((HERE / "relevance" / "paraphrases.yaml").read_text(encoding="utf-8"))
    assert len(questions) >= 150
    assert len({(q["vault"], q["question"]) for q in questions}) == len(questions), "a question is listed twice"
    assert {q["vault"] for q in questions} == {"sample_vault", "chat_vault", "corpus"}
    indexed = {name: set(walk_vault(root).files) for name, root in VAULTS.items()}
    for q in questions:
        assert set(q) == {"vault", "question", "answers", "half"} and q["half"] in ("tune", "held-out"), q
        assert q["question"].strip() and q["answers"], q
        for answer in q["answers"] if q["vault"] in indexed else ():  # the corpus is outside the repo
            assert answer in indexed[q["vault"]], f"{answer!r} is not an indexed note of {q['vault']}"
    for vault in ("sample_vault", "chat_vault", "corpus"):  # each vault's questions alternate, tune first
        halves = [q["half"] for q in questions if q["vault"] == vault]
        assert halves == [("tune", "held-out")[i % 2] for i in range(len(halves))], vault


def test_the_known_item_set_is_well_formed():
    # made from a corpus outside the repo (bench/known_items.py make); only its shape is checked here
    document = json.loads((HERE / "relevance" / "known_items.json").read_text(encoding="utf-8"))
    assert set(document) == {"about", "notes", "items"} and document["notes"] > 10_000
    items = document["items"]
    assert len(items) >= 300
    for word, holding in items.items():
        assert len(word) >= 6 and word.isalpha() and word == word.lower(), word
        assert 1 <= len(holding) <= 3 and len(set(holding)) == len(holding), word
        assert all(isinstance(p, str) and p.endswith(".md") for p in holding), word


# --- counting a term and its stem from the index -------------------------------------

def test_form_hit_counts_match_a_plain_scan_over_long_posting_lists(make_vault):
    # 400 notes: "support" forms in every note (posting lists of several blocks), rarer forms
    # in few (terms found in one note), and notes deleted after the build.
    rng = random.Random(7)
    forms = ["support", "supports", "supported", "unsupported", "supporting", "xsupportedy"]
    bodies = {f"n/{i:03}.md": " ".join(rng.choice(forms[:3]) for _ in range(rng.randint(1, 6)))
              + (f" {forms[3 + i % 3]}" if i % 97 == 0 else "") + f" word{i}" for i in range(400)}
    vault = make_vault({rel: f"---\ntitle: T\n---\n{body}\n" for rel, body in bodies.items()})
    for rel in ("n/005.md", "n/194.md", "n/388.md"):
        (vault.root / rel).unlink()
        del bodies[rel]
    sync(vault.index, procs=1)
    with vault.index.searching() as searcher:
        reader = searcher.reader()
        assert reader.has_deletions() and reader.doc_frequency("body", "supported") > 128  # several blocks
        paths = [None if reader.is_deleted(d) else searcher.stored_fields(d)["path"]
                 for d in range(reader.doc_count_all())]
        for term, stem in (("supported", "support"), ("supporting", "support"), ("word7", None)):
            exact, alone = form_hit_counts(segments(searcher), "body", term, stem)
            got = {paths[d]: (exact.get(d, 0), alone.get(d, 0)) for d in set(exact) | set(alone)}
            want = {}
            for rel, body in bodies.items():
                n_exact = body.count(term)
                n_alone = body.count(stem) - n_exact if stem else 0
                if n_exact or n_alone:
                    want[rel] = (n_exact, n_alone)
            assert got == want, term
        # every term of the segment: the one-read decoding gives what Whoosh's matcher gives
        for reader, _offset in searcher.reader().leaf_readers():
            for raw in reader.lexicon("body"):
                token = raw.decode("utf-8")
                decoded = _decoded_postings(reader, "body", token)
                assert decoded is not None
                assert [(d, float(w)) for d, w in decoded] == [
                    (d, float(w)) for d, w in _matcher_postings(reader, "body", token)], token
