"""Dates as they appear in frontmatter, normalised to timezone-aware UTC."""

from __future__ import annotations

import datetime as dt
import re

UTC = dt.UTC
_SPACE_T = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[ T](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|[+-]\d{2}:?\d{2})?$"
)


def parse_datetime(value: object) -> dt.datetime | None:
    """A frontmatter date or datetime as an aware UTC datetime; None when it is not one.

    Accepts ``YYYY-MM-DD``, ISO datetimes with or without seconds, ``T`` or a space, ``Z``
    or an offset; naive times are UTC. Numbers are not dates.
    """
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        m = _SPACE_T.match(text)
        if m:
            text = f"{m.group(1)}T{m.group(2)}{m.group(3) or ''}"
        try:
            if len(text) == 10:
                d = dt.date.fromisoformat(text)
                moment = dt.datetime(d.year, d.month, d.day)
            else:
                moment = dt.datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59-05:00 lies past datetime.max in UTC
        return None


def iso(moment: dt.datetime) -> str:
    """The one string form of a moment: UTC, seconds precision, ``+00:00``."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat()


def from_timestamp(seconds: float) -> dt.datetime:
    """A POSIX timestamp as an aware UTC datetime; the epoch when it is out of range."""
    try:
        return dt.datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return dt.datetime.fromtimestamp(0, UTC)


# A date in a file name, as daily notes are named (``2022-01-02.md``, ``Journal 2022-01-02``); not
# part of a longer run of digits, so ``20220102-1234`` or an id ``12022-01-023`` is no date.
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def date_in_name(path: str) -> dt.datetime | None:
    """The first valid ``YYYY-MM-DD`` in the file name of ``path`` (not its folders), as midnight UTC."""
    name = path.rpartition("/")[2]
    for m in _NAME_DATE.finditer(name):
        try:
            return dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
        except ValueError:  # 2022-13-45: not a date, try the next one
            continue
    return None


_DURATION = re.compile(r"(\d{1,6})\s*(s|m|min|h|d|w)", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
WHEN_FORMS = "a date (2026-05-01), a datetime (2026-05-01T14:30, UTC unless it has an offset) or a duration back " \
             "from now (90m, 2h, 3d, 1w)"


def parse_when(text: str, now: dt.datetime | None = None) -> dt.datetime | None:
    """``--since WHEN`` as an aware UTC moment: a date (midnight UTC), a datetime, or a duration
    back from ``now`` (``2h``, ``3d``; units s, m, h, d, w). None when it is none of these."""
    m = _DURATION.fullmatch(text.strip())
    if m:
        back = int(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]
        return (now or dt.datetime.now(UTC)) - dt.timedelta(seconds=back)
    return parse_datetime(text)
