"""Answers that span the served vaults (docs/vaults.md, docs/tools.md "Several vaults"):

- ``search_everywhere``: ``memory_search`` with ``vault: "*"``, run in each vault the caller may
  read, as that vault's caller, the rows merged into one page. Each vault's own order is kept
  (its chains stay whole); the vaults' rows are interleaved by score with a query (each vault
  scores with its own index's statistics, so scores of two vaults compare only roughly), by
  ``updated_at`` without one, ties to the vault served first. ``limit`` and the size bound
  apply to the merged page; ``truncated`` is true when any vault had more, the limit or the
  bound cut the merged page; each vault's messages, hints, ``persist_error`` and ``lost`` are
  all kept, and a vault that could not answer is named in ``message``.
- ``vault_counts``: what ``list_domains`` says of the vaults: ``[{name, notes, default}]``.
- ``inbox_everywhere``: an agent's ``inbox`` gathered from every vault it reaches, newest first.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
from collections.abc import Callable
from typing import Any

from vault_mem.errors import VaultMemError
from vault_mem.reads.rows import bound_message
from vault_mem.served.agents import Agent
from vault_mem.served.context import json_size, take_within, view_of
from vault_mem.served.mailbox import caller_name, digest, inbox
from vault_mem.served.vaults import Reach, Served
from vault_mem.settings import Settings

RunIn = Callable[[str, dict[str, Any], Agent | None], dict[str, Any]]  # (vault, arguments, caller) -> answer
_SUMMED = ("indexing", "checking", "meaning")  # {done, total} of each vault, added up


def search_everywhere(served: Served, reach: Reach, raw: dict[str, Any], run: RunIn,
                      config: Settings) -> dict[str, Any]:
    """memory_search in every vault ``reach`` includes (see the module docstring)."""
    names = served.reachable(reach)
    answers = {name: run(name, dict(raw), reach[name]) for name in names}
    for answer in answers.values():
        if answer.get("status") == "invalid":  # the arguments themselves: every vault says the same
            return answer
    messages: list[str] = []
    hints: list[str] = []
    found: list[list[dict[str, Any]]] = []
    merged: dict[str, Any] = {"status": "none", "count": 0, "notes": [], "truncated": False}
    for name, answer in answers.items():
        if answer.get("status") not in ("ok", "none"):
            messages.append(f"the vault {name!r} did not answer: {answer.get('message', answer.get('status'))}")
            continue
        rows = [{**note, "vault": name} for note in answer.get("notes") or []]
        if rows:
            found.append(rows)
        merged["truncated"] = merged["truncated"] or bool(answer.get("truncated"))
        _keep(messages, str(answer["message"]).split("; ") if answer.get("message") else [])
        for key in ("persist_error", "lost"):
            if answer.get(key):
                merged.setdefault(key, []).extend(answer[key])
        for key in _SUMMED:
            if isinstance(answer.get(key), dict):
                total = merged.setdefault(key, {"done": 0, "total": 0})
                total["done"] += int(answer[key].get("done", 0))
                total["total"] += int(answer[key].get("total", 0))
    for answer in answers.values():  # a miss's hints only when no vault found anything
        if answer.get("status") == "ok" or not found:
            _keep(hints, [h for h in answer.get("hints") or [] if isinstance(h, str)])
    query = raw.get("query")
    by_score = isinstance(query, str) and bool(query.strip())
    order = (lambda row: (-float(row.get("score") or 0.0), -_when(row))) if by_score else (lambda row: -_when(row))
    rows = list(heapq.merge(*found, key=order))
    if raw.get("follow", "active") != "all":
        rows = chains_across(rows, raw.get("follow", "active") == "full_history", config.search_older_shown)
    limit = _limit(raw, config)
    if len(rows) > limit:
        rows, merged["truncated"] = rows[:limit], True
    fitted = take_within(rows, config.row_budget - json_size(hints))
    if fitted < len(rows):
        messages.append(bound_message(f"{fitted} of {len(rows)} notes", None, config.max_answer_chars))
        rows, merged["truncated"] = rows[:fitted], True
    merged.update(status="ok" if rows else "none", count=len(rows), notes=rows)
    if messages:
        merged["message"] = "; ".join(messages)
    if hints:
        merged["hints"] = hints
    agent = caller_name(None, raw) or next((a.name for a in reach.values() if a is not None), None)
    if agent is not None:
        merged["inbox"], merged["inbox_more"] = [], 0
        inbox_everywhere(served, reach, raw, merged, config)
    return merged


def chains_across(rows: list[dict[str, Any]], full_history: bool, shown: int) -> list[dict[str, Any]]:
    """``rows`` (merged, in rank order) with each chain that crosses vaults together, as one vault
    keeps its own (docs/ranking.md, "The current version first"): a row whose ``superseded_by``
    names a row of another vault among ``rows`` belongs to the row its successors lead to (its
    head), and the chain stands where its first member ranked. The head shows the best score of
    its members; the others fold into its ``older`` (``full_history``: follow it as rows of their
    own, in rank order)."""
    at = {row["permalink"]: i for i, row in enumerate(rows)}

    def head_of(i: int) -> int:
        seen = {i}
        while True:
            row = rows[i]
            later = next((at[p] for p in row.get("superseded_by") or [] if p in at and at[p] not in seen
                          and rows[at[p]]["vault"] != row["vault"]), None)
            if later is None:
                return i
            seen.add(later)
            i = later

    groups: dict[int, list[int]] = {}  # head -> its members in rank order, in the order first met
    for i in range(len(rows)):
        groups.setdefault(head_of(i), []).append(i)
    if all(len(members) == 1 for members in groups.values()):
        return rows
    chained: list[dict[str, Any]] = []
    for head, members in groups.items():
        older = [i for i in members if i != head]
        top = {**rows[head], "score": max(float(rows[i].get("score") or 0.0) for i in members)} \
            if "score" in rows[head] else dict(rows[head])
        if full_history:
            chained += [top, *(rows[i] for i in older)]
            continue
        if older:
            links = [p for i in older for p in (rows[i]["permalink"], *(rows[i].get("older") or []))]
            top["older_count"] = int(top.get("older_count", 0)) + sum(1 + int(rows[i].get("older_count", 0))
                                                                        for i in older)
            top["older"] = ([*top.get("older", []), *links])[:shown]
        chained.append(top)
    return chained


def vault_counts(served: Served, reach: Reach) -> list[dict[str, Any]]:
    """The vaults ``reach`` includes, in the order served: name, the notes the caller may see in
    it, and whether it is the one a call without ``vault`` goes to."""
    default = served.chosen(None, reach)
    rows = []
    for name in served.reachable(reach):
        try:
            with view_of(served.vaults[name], reach[name]) as view:
                notes = len(view.snapshot.all_docs())
        except VaultMemError:  # not open yet: nothing indexed to count
            notes = 0
        rows.append({"name": name, "notes": notes, "default": name == default})
    return rows


def inbox_everywhere(served: Served, reach: Reach, raw: dict[str, Any], answer: dict[str, Any],
                     config: Settings) -> None:
    """``answer``'s ``inbox`` and ``inbox_more`` made from every vault the caller reaches, each
    row naming its vault (each vault keeps what the agent read there: memory_read marks it)."""
    rows: list[tuple[float, int, dict[str, Any]]] = []
    for place, name in enumerate(served.reachable(reach)):
        caller = reach[name]
        agent = caller_name(caller, raw)
        if agent is None:
            continue
        vault = served.vaults[name]
        try:
            with view_of(vault, caller) as view:
                updated = view.snapshot.cells("updated")
                for doc in inbox(view, agent):
                    when = updated[doc]
                    rows.append((-(when if isinstance(when, int | float) else -math.inf), place,
                                 {**digest(view, doc), "vault": name}))
        except (VaultMemError, OSError, ValueError):  # a vault not open yet, or a state not readable now
            continue
    rows.sort(key=lambda row: row[:2])
    answer["inbox"] = [row for _when_, _place, row in rows[:config.inbox_shown]]
    answer["inbox_more"] = max(0, len(rows) - config.inbox_shown)


def _keep(into: list[str], items: list[str]) -> None:
    for item in items:
        if item and item not in into:
            into.append(item)


def _when(row: dict[str, Any]) -> float:
    """A row's ``updated_at`` as POSIX seconds (-inf when it has none)."""
    text = row.get("updated_at")
    if not isinstance(text, str):
        return -math.inf
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return -math.inf


def _limit(raw: dict[str, Any], config: Settings) -> int:
    """memory_search's ``limit`` as each vault took it (they checked it already)."""
    given = raw.get("limit")
    limit = given if isinstance(given, int) and not isinstance(given, bool) else config.search_default_limit
    return max(1, min(limit, config.search_max_limit))
