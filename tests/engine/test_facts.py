"""The parts of the rule by which two notes say the same (search/facts.py; docs/ranking.md,
"Notes that say the same"), one by one: what the labelled set of tests/unit/test_duplicates.py
shows through ``similar`` and ``tidy``."""

from __future__ import annotations

from vault_mem.search import facts
from vault_mem.search.facts import Said, alike, disagree, unmatched
from vault_mem.settings import Settings


def said(title: str, body: str) -> Said:
    """What is compared of a note, with the ``similar_link_share`` setting's default."""
    return facts.said(title, body, Settings().similar_link_share)


def wording(a: object, b: object) -> float:
    return 1.0


def test_one_template_with_other_names_or_numbers_disagrees() -> None:
    entities = said("Feature: Create Entities", "- Creates multiple new entities in the knowledge graph\n"
                    "- Ignores entities whose name already exists\n\n## Relations\n\n- implemented_in [[Manager]]\n")
    relations = said("Feature: Create Relations", "- Creates multiple new relations between entities in the "
                     "knowledge graph\n- Skips relations that already exist\n\n## Relations\n\n"
                     "- implemented_in [[Manager]]\n")
    assert disagree(entities, relations), "each names what the other does not: Entities, Relations"
    budget = said("Marketing budget 2025", "The budget is 210,000 EUR, approved on 2024-12-10.")
    later = said("Marketing budget 2026", "The budget is 240,000 EUR, approved on 2025-12-09.")
    assert disagree(budget, later)
    assert {"2025", "2024-12-10"} <= set(unmatched(budget, later)), "the year and the date are facts"
    # a date is one fact: its parts found elsewhere do not name it
    assert disagree(said("1:1 with Priya 2026-02-02", "Notes on the exporter."),
                    said("1:1 with Priya 2026-02-16", "Notes on the exporter, 02 of them."))


def test_a_restatement_keeps_its_facts_and_may_leave_one_out() -> None:
    first = said("Queue choice", "We chose NATS JetStream for the work queue on 2025-03-02. Kafka was rejected.")
    again = said("Message broker decision", "Decision of 2025-03-02: the work queue moves to NATS JetStream.")
    assert not disagree(first, again), "only the first names Kafka: one side lacks a fact, not both"
    assert alike(first, again, lambda a, b: 0.5) == 0.5
    # a name that starts a sentence in one note is still named by it
    assert not disagree(said("Cat", "The vet saw Miso on 2025-09-15."), said("Shots", "Miso: seen 2025-09-15."))
    # an identifier is named by its parts
    assert not disagree(said("Feature Open Nodes", "Takes an array of names."),
                        said("open_nodes tool", "Takes an array of names."))


def test_notes_of_links_compare_their_targets_and_a_link_is_not_an_embed() -> None:
    index = said("Index of the features", "- [[Create Entities]]\n- [[Create Relations]]\n- [[Search Nodes]]\n")
    reordered = said("Features", "All of them:\n\n- [[Search Nodes]]\n- [[Create Entities]]\n- [[Create Relations]]\n")
    embeds = said("The features at a glance", "![[Create Entities]]\n![[Create Relations]]\n![[Search Nodes]]\n")
    assert index.links is not None and alike(index, reordered, wording) == 1.0
    assert alike(index, embeds, wording) == 0.0, "an index of notes is not a page showing them"
    prose = said("About features", "We shipped [[Create Entities]] first.\nThen the rest followed.\nIt went well.\n")
    assert prose.links is None and alike(index, prose, wording) == 0.0
