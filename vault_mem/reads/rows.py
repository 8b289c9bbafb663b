"""Pieces shared by the contracts' rows: snippets and the common row fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vault_mem.served.context import json_size
from vault_mem.vault.fields import FIELDS, layout
from vault_mem.vault.note import domain_of, permalink_of, tokens_for_chars


def snippet(body: str, limit: int, see: str = "memory_read", total: int | None = None) -> str:
    """The first ``limit`` code points of a body of ``total`` characters (``len(body)`` unless
    only its head is given), with a marker saying how much was left out and where it is."""
    total = len(body) if total is None else total
    if total <= limit:
        return body[:limit]
    return f"{body[:limit]}… [+{total - limit} chars, see {see}]"


def snippet_of(record: dict[str, Any], limit: int) -> str:
    """``snippet`` of a stored record, from its stored head (which is longer than any snippet;
    ``limit``: the ``snippet_chars`` setting)."""
    head = str(record.get("head", ""))
    return snippet(head, limit, total=int(record.get("body_chars", len(head))))


def body_tokens(record: dict[str, Any]) -> int:
    """``est_tokens`` of a stored record's whole body."""
    return tokens_for_chars(int(record.get("body_chars", 0)))


def task_fields(record: dict[str, Any]) -> dict[str, Any]:
    """``state`` and ``progress`` for tasks; nothing for other types."""
    if record.get("type") != "task":
        return {}
    return {"state": record.get("state") or "open", "progress": record.get("progress") or {"done": 0, "total": 0}}


def identity(record: dict[str, Any], permalink: Callable[[str], str] = permalink_of) -> dict[str, Any]:
    path = record["path"]
    return {"uid": record["uid"], "permalink": permalink(path), "path": path, "domain": domain_of(path)}


# -- cutting what is too big (docs/tools.md "Bounded": nothing is cut without saying so) ---

# Row fields that may be cut when a record is huge (10,000 tags, a 100k title, 5,000 keys of
# metadata): the field table's cuttable rows, and ``hierarchy``; identity, dates, status and etag
# never are. The order breaks ties between fields of one size.
ROW_CUTTABLE = layout(("title", "tags", "metadata", "aliases", "paths", "supersedes", "superseded_by",
                       "hierarchy", "namespace", "scope", "agent", "project", "type"),
                      (row.name for row in FIELDS if row.cut))


def cut_to_fit(value: dict[str, Any], budget: int, cuttable: tuple[str, ...],
               exclude: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Halve the largest ``cuttable`` fields of ``value`` in place until its JSON (less the
    ``exclude`` keys) fits ``budget``; a cut string ends with ``…``.

    Returns {field: {shown, total, unit}} for every field that was cut.
    """
    cuts: dict[str, dict[str, Any]] = {}
    sizes = {k: json_size(value[k]) for k in cuttable if k in value}
    total = json_size({k: v for k, v in value.items() if k not in exclude})
    while total > budget:
        field = max((k for k in sizes if _can_shrink(value[k])), key=lambda k: sizes[k], default=None)
        if field is None:
            break
        before = value[field]
        value[field] = _shrink(before)
        if field not in cuts:
            cuts[field] = {"shown": 0, "total": len(before), "unit": _unit(before)}
        shown = len(value[field])
        cuts[field]["shown"] = shown - 1 if isinstance(before, str) else shown  # less the marker
        new_size = json_size(value[field])
        total -= sizes[field] - new_size
        sizes[field] = new_size
    return cuts


def fit_row(row: dict[str, Any], budget: int) -> bool:
    """Cut a list row whose fields (besides ``content``) pass ``budget`` (the ``row_fields_budget``
    setting); the row then carries ``truncated_fields`` ({field: {shown, total, unit}}). True when
    something was cut."""
    cuts = cut_to_fit(row, budget, ROW_CUTTABLE, exclude=("content",))
    if cuts:
        row["truncated_fields"] = cuts
    return bool(cuts)


def cut_message(refs: list[str], bound: int, see: str = "memory_read") -> str:
    """What a list answer says when fields of some of its rows were cut to keep it under ``bound``
    characters (the ``max_answer_chars`` setting)."""
    shown = ", ".join(r if len(r) <= 120 else r[:117] + "..." for r in refs[:3])
    more = f" and {len(refs) - 3} more" if len(refs) > 3 else ""
    return (f"fields of {shown}{more} were cut to keep the answer under {bound:,} characters "
            f"(see each row's truncated_fields; {see} shows the whole record)")


def bound_message(shown: str, next_offset: int | None, bound: int) -> str:
    """What a list answer says when the size bound (``bound`` characters: the ``max_answer_chars``
    setting), not ``limit``, ended its page.

    ``shown`` counts what came back ("12 of 20 chunks"); with no ``next_offset`` (a tool
    that does not page) the advice is to ask for less."""
    rest = (f"pass offset={next_offset} for the rest" if next_offset is not None
            else "lower limit or narrow the query")
    return f"{shown} fit the answer's size bound ({bound:,} characters); {rest}"


def _can_shrink(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > 64
    return isinstance(value, list | dict) and len(value) > 0


def _shrink(value: Any) -> Any:
    """A smaller version of ``value``: half a list's items or a dict's keys, half a string."""
    if isinstance(value, str):
        return value[: len(value) // 2] + "…"
    if isinstance(value, list):
        return value[: len(value) // 2]
    if isinstance(value, dict):
        keys = list(value)[: len(value) // 2]
        return {k: value[k] for k in keys}
    return value


def _unit(value: Any) -> str:
    if isinstance(value, str):
        return "characters"
    return "keys" if isinstance(value, dict) else "items"
