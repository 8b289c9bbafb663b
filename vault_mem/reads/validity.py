"""What was true when (docs/vault-format.md, "Validity"; docs/tools.md, ``as_of``).

A note is true over a window ``[start, end)``: ``start`` is its ``valid_from`` (a plain date: that
day's first instant, UTC), else its ``created``; ``end`` is its ``valid_until`` (a plain date: the
whole day counts, the window ends at the next day's start), else the earliest start among the
live notes that supersede it (``reads/lineage.py``), else it is open. ``memory_search`` and
``memory_list`` with ``as_of`` keep the notes whose window holds that instant; every row of a note
whose window has ended by now says so (``ended``).

Only the notes with a validity bound or a supersession edge (index field ``lineage`` = "y") are
read; the rest go by the ``created`` column alone.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vault_mem.reads.dates import epoch_bounds, parse_period
from vault_mem.reads.lineage import Lineage
from vault_mem.served.context import View
from vault_mem.served.params import Args, text_param
from vault_mem.vault.dates import UTC, iso, parse_datetime

AS_OF = text_param("as_of", "A date: the versions current then.")


@dataclass(frozen=True)
class AsOf:
    """An ``as_of`` instant (whole epoch seconds) and the text it was given as."""

    at: int
    text: str


def as_of_param(args: Args) -> AsOf | None:
    """The ``as_of`` parameter: a partial date means the end of its period (``2025-03`` is the last
    second of March), a datetime its own instant. None when not given."""
    text = args.text("as_of", None, max_len=100)
    if text is None or not text.strip():
        return None
    period = parse_period(text, "as_of")
    if period.partial:
        return AsOf(epoch_bounds(period.start, period.end)[1] - 1, text.strip())
    return AsOf(math.floor(period.start.timestamp()), text.strip())


def bound_start(value: Any) -> int | None:
    """A ``valid_from`` as epoch seconds (a date: its first second)."""
    moment = parse_datetime(value) if value else None
    return math.ceil(moment.timestamp()) if moment is not None else None


def bound_end(value: Any) -> int | None:
    """A ``valid_until`` as the first epoch second past it (a date: the next day's start)."""
    if not value:
        return None
    text = str(value)
    moment = parse_datetime(text)
    if moment is None:
        return None
    if len(text) == 10:  # a plain date: the whole day is still true
        moment += dt.timedelta(days=1)
    return math.ceil(moment.timestamp())


class Windows:
    """The validity windows of one view's notes, over its lineage graph."""

    def __init__(self, view: View, lineage: Lineage) -> None:
        self.view = view
        self.lineage = lineage
        self._created: Sequence[Any] | None = None

    def _created_at(self, doc: int) -> int:
        if self._created is None:
            self._created = self.view.snapshot.column("created")
        return int(self._created[doc] or 0)

    def start(self, doc: int) -> int:
        rec = self.view.snapshot.record(doc)
        stated = bound_start(rec.get("valid_from"))
        return stated if stated is not None else self._created_at(doc)

    def end(self, doc: int) -> int | None:
        """The first second the note is no longer true (None: still open)."""
        stated = bound_end(self.view.snapshot.record(doc).get("valid_until"))
        if stated is not None:
            return stated
        if not self.lineage.superseded(doc):  # a cycle's newest member stays current (reads/lineage.py)
            return None
        return min(self.start(d) for d in self.lineage.superseders(doc))

    def not_current(self, at: int) -> set[int]:
        """The live notes whose window does not hold ``at``."""
        view = self.view
        out = set(view.snapshot.docs_in_range("created", at + 1, None))  # not written yet (unless valid_from says)
        for doc in view.snapshot.term_docs("lineage", ["y"]):
            rec = view.snapshot.record(doc)
            start = bound_start(rec.get("valid_from"))
            if start is not None:
                if start <= at:
                    out.discard(doc)
                else:
                    out.add(doc)
            end = self.end(doc)
            if end is not None and end <= at:
                out.add(doc)
        for doc in self.lineage.superseded_targets():  # a target need not declare anything itself
            end = self.end(doc)
            if end is not None and end <= at:
                out.add(doc)
        return out

    def marks(self, doc: int, now: int | None = None) -> dict[str, Any]:
        """What a row says of a note whose window has ended by ``now``: ``valid_until`` (stated, or
        the start of what superseded it) and ``ended``. Empty when it is still true."""
        end = self.end(doc)
        moment = int(time.time()) if now is None else now
        if end is None or end > moment:
            return {}
        stated = self.view.snapshot.record(doc).get("valid_until")
        shown = stated if stated else iso(dt.datetime.fromtimestamp(end, UTC))
        return {"valid_until": shown, "ended": True}


def left_out_message(count: int, as_of: AsOf) -> str:
    return (f"{count} matching notes were not current at as_of {as_of.text!r} (not yet written, or "
            "ended or superseded by then) and are left out")
