"""memory_list's page: the rows of the hits in answer order from an offset, with the fields
asked for, added while the answer's size bound allows; a full body that alone passes it is
cut, and the warning says where ``memory_read`` continues."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from vault_mem.reads.lineage import Lineage
from vault_mem.reads.rows import cut_message, fit_row
from vault_mem.served.context import Budget, View, json_size
from vault_mem.vault.fields import plain


def page_rows(view: View, lineage: Lineage, hits: Iterator[int], offset: int, limit: int,
              fields: tuple[str, ...], preview_chars: int,
              marks: Callable[[int], dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], bool, list[str]]:
    """The rows of ``hits`` (in answer order) from ``offset``: at most ``limit`` (-1: any number),
    within the size bound; whether more hits follow; and the warnings for rows that were cut.
    ``marks``: keys every row of a note gets besides its fields (``ended``)."""
    for _ in range(offset):
        if next(hits, None) is None:
            return [], False, []
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    page = Budget(view.config.row_budget)
    for doc in hits:
        if len(rows) == limit:
            return rows, True, warnings
        row = _row(view, lineage, doc, fields, preview_chars)
        if marks is not None:
            row.update(marks(doc))
        note = (cut_message([row.get("permalink") or row["id"]], view.config.max_answer_chars)
                if fit_row(row, view.config.row_fields_budget) else None)
        if json_size(row) + 2 > view.config.row_budget and "content" in row:
            row, content_note = _cut_content(row, view.config.row_budget)
            note = f"{note}; {content_note}" if note else content_note
        if not page.take(row):
            return rows, True, warnings
        rows.append(row)
        if note:
            warnings.append(note)
    return rows, False, warnings


def _row(view: View, lineage: Lineage, doc: int, fields: tuple[str, ...], preview_chars: int) -> dict[str, Any]:
    rec = view.snapshot.record(doc)
    values: dict[str, Callable[[], Any]] = {
        "id": lambda: rec["uid"],
        "title": lambda: rec["title"],
        "type": lambda: rec["type"],
        "tags": lambda: rec["tags"],
        "metadata": lambda: rec["metadata"],
        "created": lambda: rec["created"],
        "updated": lambda: rec["updated"],
        "importance": lambda: rec["importance"],
        "permalink": lambda: view.permalink(rec["path"]),
        "path": lambda: rec["path"],
        "status": lambda: rec["status"],
        "etag": lambda: rec["etag"],
        "supersedes": lambda: [view.snapshot.record(d)["uid"] for d in lineage.predecessors(doc)]
        + lineage.dangling(doc, "supersedes"),
        "superseded_by": lambda: [view.snapshot.record(d)["uid"] for d in lineage.superseders(doc)]
        + lineage.dangling(doc, "superseded_by"),
        "content_preview": lambda: _preview(rec, preview_chars),
        "content": lambda: view.body(rec),
    }
    return {name: values[name]() if name in values else plain(rec.get(name)) for name in fields}


def _preview(rec: dict[str, Any], chars: int) -> str:
    head = str(rec.get("head", ""))
    total = int(rec.get("body_chars", len(head)))
    return head[:chars] + ("…" if total > chars else "")


def _cut_content(row: dict[str, Any], row_budget: int) -> tuple[dict[str, Any], str]:
    """Cut a row's content so that the row fits the size bound (``row_budget``) alone; say where to
    continue."""
    content = str(row["content"])
    keep = len(content)
    row = dict(row, content="", content_truncated=True)
    while keep > 0 and json_size(row | {"content": content[:keep]}) + 2 > row_budget - 200:
        over = json_size(row | {"content": content[:keep]}) + 2 - (row_budget - 200)
        keep = max(0, keep - max(over, 1))
    row["content"] = content[:keep]
    ref = row.get("permalink") or row["id"]
    return row, (f"{ref}: content cut at {keep:,} of {len(content):,} characters to keep the answer "
                 f"under 40,000; read the rest with memory_read(ref={ref!r}, offset={keep})")
