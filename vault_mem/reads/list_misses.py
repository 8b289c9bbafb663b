"""Why ``memory_list`` found nothing: the hints of its empty answer (docs/tools.md, "Hints on a
miss"), built from what the call was asked (``ListMiss``), only when it found nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from vault_mem.reads.misses import Filter, echo, listed, missing_word_hints, range_hint, tag_hints, why_empty
from vault_mem.served.context import View
from vault_mem.vault.names import words


@dataclass
class ListMiss:
    """What an empty ``memory_list`` call was asked."""

    query: str
    needle: str | None  # the query when it holds non-word characters (checked on the text)
    candidates: set[int] | None  # what the query's words matched; None without a query
    tags_any: list[str]
    tags_all: list[str]
    tags_none: list[str]
    filters: dict[str, list[Any]]  # metadata_filters as given
    indexed: dict[str, tuple[str, list[str]]]  # the metadata filters the index answers: key -> (field, terms)
    created: tuple[int, int] | None
    raw: dict[str, Any]  # the call's arguments, to echo
    contains: Callable[[int, str], bool]  # whether a note's title or body holds a text
    matches: Callable[[int], bool]  # whether a note passes the metadata filters the index cannot answer


def why_no_memories(view: View, miss: ListMiss) -> list[str]:
    """Query words no memory holds (with the closest words), then which filter admits no
    memory, or how the filters exclude the query's matches together."""
    config = view.config
    if view.snapshot.doc_count() == 0:
        return ["the index holds no memories yet"]
    hints: list[str] = []
    found = miss.candidates
    if found is not None and not found:
        hints = missing_word_hints(view, list(dict.fromkeys(words(miss.query))), ("title", "body"), "title or body")
        if not hints:
            hints = [f"no memory's title or body holds every word of {echo(miss.query, config=config)}"]
    elif found is not None and miss.needle is not None and len(found) <= config.miss_text_checks:
        found = {d for d in found if miss.contains(d, miss.needle)}
        if not found:
            hints = [f"no memory's title or body holds the text {echo(miss.query, config=config)}"]
    filters: list[Filter] = []
    snapshot = view.snapshot
    if miss.tags_any:
        filters.append(Filter(f"tags_any {listed(miss.tags_any, config=config)}",
                              partial(snapshot.term_docs, "tags", miss.tags_any),
                              lambda: "; ".join(tag_hints(view, miss.tags_any, "tags_any"))))
    for tag in miss.tags_all:
        filters.append(Filter(f"tags_all {echo(tag, config=config)}", partial(view.snapshot.term_docs, "tags", [tag]),
                              partial(lambda t: tag_hints(view, [t], "tags_all")[0], tag)))
    if miss.tags_none:
        filters.append(Filter(f"tags_none {listed(miss.tags_none, 'and', config=config)}",
                              lambda: set(snapshot.all_docs()) - set(snapshot.term_docs("tags", miss.tags_none)),
                              lambda: "tags_none: every memory carries one of these tags"))
    for key, (field, terms) in miss.indexed.items():
        values = listed([str(v) for v in miss.filters[key]], config=config)
        label = f"metadata_filters {key[:config.hint_echo]}={values}"
        filters.append(Filter(label, partial(view.snapshot.term_docs, field, terms),
                              partial(lambda lb: f"{lb}: no memory has it", label)))
    others = [k for k in miss.filters if k not in miss.indexed]
    if others and view.snapshot.doc_count() <= config.miss_record_checks:
        keys = ", ".join(k[:config.hint_echo] for k in others)
        filters.append(Filter(f"metadata_filters on {keys}",
                              lambda: [d for d in view.snapshot.all_docs() if miss.matches(d)],
                              lambda: f"metadata_filters: no memory has the {keys} asked for"))
    if miss.created is not None:
        lo, hi = miss.created
        column = view.snapshot.column("created")
        names = [f"{n} {echo(str(miss.raw[n]), config=config)}" if miss.raw.get(n) is not None else "any date"
                 for n in ("date_from", "date_to")]
        filters.append(Filter("date_from/date_to",
                              lambda: [d for d in snapshot.all_docs()
                                       if column[d] is not None and lo <= column[d] <= hi],
                              lambda: range_hint(view, "created", lo, hi, *names)))
    return hints + why_empty(set() if hints else found, filters, "memories", config=config)
