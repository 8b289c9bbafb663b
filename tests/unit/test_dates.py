"""The shared date grammar (vault_mem.reads.dates): plain unit tests of a pure module."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_mem.errors import InvalidInput
from vault_mem.reads.dates import epoch_bounds, parse_period

UTC = dt.UTC


def d(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("2025", d(2025, 1, 1), d(2026, 1, 1)),
    ("2025-02", d(2025, 2, 1), d(2025, 3, 1)),
    ("2024-02", d(2024, 2, 1), d(2024, 3, 1)),
    ("2025-12", d(2025, 12, 1), d(2026, 1, 1)),
    ("2025-04", d(2025, 4, 1), d(2025, 5, 1)),
    ("2024-02-29", d(2024, 2, 29), d(2024, 3, 1)),
    ("2025-12-31", d(2025, 12, 31), d(2026, 1, 1)),
    ("2025-01-31", d(2025, 1, 31), d(2025, 2, 1)),
    (" 2025-03 ", d(2025, 3, 1), d(2025, 4, 1)),
])
def test_partial_dates_cover_their_whole_period(text, start, end):
    period = parse_period(text, "since")
    assert (period.start, period.end, period.partial) == (start, end, True)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("2025-03-01T10:00:00Z", d(2025, 3, 1, 10), d(2025, 3, 1, 10, 0, 1)),
    ("2025-03-01T10:00:00", d(2025, 3, 1, 10), d(2025, 3, 1, 10, 0, 1)),
    ("2025-03-01 10:00", d(2025, 3, 1, 10), d(2025, 3, 1, 10, 1)),
    ("2025-03-01T10:00:00+02:00", d(2025, 3, 1, 8), d(2025, 3, 1, 8, 0, 1)),
    ("2025-03-01T10:00:00-0530", d(2025, 3, 1, 15, 30), d(2025, 3, 1, 15, 30, 1)),
    ("2025-03-01T10:00:00.250Z", d(2025, 3, 1, 10, 0, 0, 250000), d(2025, 3, 1, 10, 0, 0, 250001)),
    ("2025-12-31T23:30:00-01:00", d(2026, 1, 1, 0, 30), d(2026, 1, 1, 0, 30, 1)),
])
def test_datetimes_are_instants_in_utc(text, start, end):
    period = parse_period(text, "until")
    assert (period.start, period.end, period.partial) == (start, end, False)


def test_year_9999_does_not_overflow():
    period = parse_period("9999", "since")
    assert period.start == d(9999, 1, 1) and period.end > d(9999, 12, 31, 23, 59)


@pytest.mark.parametrize(("text", "days"), [("7d", 7), ("2w", 14), ("1m", 30), ("1y", 365), ("0d", 0), ("3M", 90)])
def test_relative_forms_count_back_from_now(text, days):
    now = d(2025, 3, 10, 12, 0, 0)
    period = parse_period(text, "date_from", relative=True, now=now)
    assert period.start == now - dt.timedelta(days=days) and not period.partial
    assert period.end == period.start + dt.timedelta(seconds=1)


def test_relative_forms_only_when_asked():
    with pytest.raises(InvalidInput) as info:
        parse_period("7d", "since")
    assert "since" in info.value.message and "Nd" not in info.value.message
    with pytest.raises(InvalidInput) as info:
        parse_period("7x", "date_from", relative=True)
    assert "Nd, Nw, Nm (30 days), Ny (365 days)" in info.value.message


@pytest.mark.parametrize("text", [
    "", "   ", "garbage", "2025-02-30", "2025-13", "2025-00", "0000", "2025-1-5", "25-01-01",
    "2025-03-01T24:00", "2025-03-01T10:60", "2025-03-01T10:00+25:00", "20250301", "2025-W10",
    "2025/03/01", "2023-02-29", "2025-03-01T", "0001-01-01T00:00+01:00", "yesterday",
])
def test_everything_else_is_invalid_and_says_what_is_accepted(text):
    with pytest.raises(InvalidInput) as info:
        parse_period(text, "until")
    assert info.value.param == "until"
    assert info.value.message.startswith("until")
    assert "YYYY, YYYY-MM, YYYY-MM-DD or ISO datetime" in info.value.message


def test_epoch_bounds_round_up_to_whole_seconds():
    assert epoch_bounds(d(1970, 1, 1, 0, 0, 1), d(1970, 1, 1, 0, 0, 2)) == (1, 2)
    assert epoch_bounds(d(1970, 1, 1, 0, 0, 1, 500000), d(1970, 1, 1, 0, 0, 2, 1)) == (2, 3)


@given(st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 30)))
def test_every_partial_form_of_a_date_contains_it(day):
    moment = dt.datetime(day.year, day.month, day.day, tzinfo=UTC)
    for text in (f"{day.year:04d}", f"{day.year:04d}-{day.month:02d}", day.isoformat()):
        period = parse_period(text, "since")
        assert period.partial
        assert period.start < period.end
        assert period.start <= moment < period.end


@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                    timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)),
                                               dt.timezone(dt.timedelta(hours=-8))])))
def test_every_iso_datetime_is_the_instant_it_names(moment):
    period = parse_period(moment.isoformat(), "until")
    assert not period.partial
    assert period.start == moment.astimezone(UTC)
    assert period.start < period.end
