"""The date grammar of the query parameters (``mem_recall``'s since/until, ``memory_list``'s
date_from/date_to): text -> a period ``[start, end)`` of aware UTC datetimes.

Accepted: ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` (each a *partial* date covering its whole
year, month or day), an ISO datetime ``YYYY-MM-DDTHH:MM[:SS[.ffffff]]`` with ``T`` or a
space and an optional ``Z`` or ``±HH:MM`` offset (naive = UTC), and, only when the caller
asks for it, relative ``Nd``, ``Nw``, ``Nm`` (30 days), ``Ny`` (365 days) back from ``now``.

A datetime or a relative form is not partial; its period is one unit of the precision it
was written in (a minute, a second, a microsecond; a second for relative forms), so that
``start < end`` always holds and "inclusive up to it" is ``< end``. Callers pick:

- ``mem_recall``: since -> ``start``; until -> ``end`` when partial, else ``start`` (exclusive);
- ``memory_list``: date_from -> ``start``; date_to -> ``end`` (inclusive of the whole period).

Anything else (empty, garbage, an impossible date such as 2025-02-30, a year 0) raises
InvalidInput naming the parameter and what it accepts.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass

from vault_mem.errors import InvalidInput

UTC = dt.UTC
_MAX = dt.datetime.max.replace(tzinfo=UTC)

_YEAR = re.compile(r"(\d{4})")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)
_RELATIVE = re.compile(r"(\d{1,7})\s*([dwmyDWMY])")
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}

ACCEPTED = "YYYY, YYYY-MM, YYYY-MM-DD or ISO datetime (2025-03-01T10:00:00Z; naive times are UTC)"
ACCEPTED_RELATIVE = ACCEPTED + ", or relative Nd, Nw, Nm (30 days), Ny (365 days) back from now"


@dataclass(frozen=True)
class Period:
    """``[start, end)`` in aware UTC; ``partial`` when the text was a year, month or day."""

    start: dt.datetime
    end: dt.datetime
    partial: bool


def parse_period(text: str, param: str, relative: bool = False,
                 now: dt.datetime | None = None) -> Period:
    """The period ``text`` names; InvalidInput(param, ...) when it is not in the grammar."""
    accepted = ACCEPTED_RELATIVE if relative else ACCEPTED
    value = text.strip() if isinstance(text, str) else ""
    if not value:
        raise InvalidInput(param, f"must not be empty; accepted: {accepted}")
    try:
        period = _parse(value, relative, now)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(param, f"{_show(value)} is not a valid date ({exc}); accepted: {accepted}") from None
    if period is None:
        raise InvalidInput(param, f"{_show(value)} is not a date; accepted: {accepted}")
    return period


def _parse(value: str, relative: bool, now: dt.datetime | None) -> Period | None:
    if m := _YEAR.fullmatch(value):
        year = int(m.group(1))
        return _partial(dt.datetime(year, 1, 1, tzinfo=UTC), _next_year(year))
    if m := _MONTH.fullmatch(value):
        year, month = int(m.group(1)), int(m.group(2))
        start = dt.datetime(year, month, 1, tzinfo=UTC)
        end = _next_year(year) if month == 12 else dt.datetime(year, month + 1, 1, tzinfo=UTC)
        return _partial(start, end)
    if m := _DAY.fullmatch(value):
        start = dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
        return _partial(start, _add(start, dt.timedelta(days=1)))
    if m := _DATETIME.fullmatch(value):
        return _datetime_period(m)
    if relative and (m := _RELATIVE.fullmatch(value)):
        moment = (now or dt.datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        days = int(m.group(1)) * _UNIT_DAYS[m.group(2).lower()]
        start = moment - dt.timedelta(days=days)
        return Period(start, _add(start, dt.timedelta(seconds=1)), False)
    return None


def _datetime_period(m: re.Match[str]) -> Period:
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6) or 0)
    fraction = m.group(7)
    micro = int(fraction.ljust(6, "0")) if fraction else 0
    tz = _offset(m.group(8))
    moment = dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(UTC)
    if fraction:
        unit = dt.timedelta(microseconds=1)
    elif m.group(6):
        unit = dt.timedelta(seconds=1)
    else:
        unit = dt.timedelta(minutes=1)
    return Period(moment, _add(moment, unit), False)


def _offset(text: str | None) -> dt.tzinfo:
    if not text or text in ("Z", "z"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"offset {text} is out of range")
    return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))


def _partial(start: dt.datetime, end: dt.datetime) -> Period:
    return Period(start, end, True)


def _next_year(year: int) -> dt.datetime:
    # The period of 9999 ends at the last representable instant rather than overflowing.
    return dt.datetime(year + 1, 1, 1, tzinfo=UTC) if year < 9999 else _MAX


def _add(moment: dt.datetime, delta: dt.timedelta) -> dt.datetime:
    try:
        return moment + delta
    except OverflowError:
        return _MAX


def epoch_bounds(start: dt.datetime, end: dt.datetime) -> tuple[int, int]:
    """Integer epoch seconds ``(lo, hi)`` such that a whole-second ``c`` lies in
    ``[start, end)`` exactly when ``lo <= c < hi`` (the index stores ``created`` as seconds)."""
    return math.ceil(start.timestamp()), math.ceil(end.timestamp())


def _show(value: str) -> str:
    return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
