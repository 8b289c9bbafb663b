"""The progress a person sees: a bar that fits the terminal with the rate and the time left, or a
plain line per 10% when stderr is not a terminal."""

from __future__ import annotations

import io
import time

import pytest

from vault_mem.search.progress import Progress, eta


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_the_bar_shows_rate_and_time_left_and_never_wraps(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    stream = Terminal()
    bar = Progress("resuming the interrupted build", 13_415, stream=stream)
    bar.start = time.monotonic() - 10  # as if ten seconds had gone by
    bar.advance(1_200)
    drawn = stream.getvalue().split("\r")[-1]
    assert len(drawn) < columns, drawn
    assert "1,200/13,415 notes" in drawn[: columns - 1] or columns < 60
    if columns >= 80:
        assert "/s" in drawn and "left" in drawn


def test_elsewhere_a_line_per_tenth() -> None:
    stream = io.StringIO()
    bar = Progress("indexing", 1_000, stream=stream)
    for _ in range(1_000):
        bar.advance()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 11 and lines[-1].startswith("indexing: 1,000/1,000 notes")
    assert all(line.startswith("indexing: ") for line in lines)


@pytest.mark.parametrize("seconds, text", [(4.4, "4 s"), (65, "1 min 05 s"), (3725, "1 h 02 min")])
def test_time_left_reads_like_a_person_would_say_it(seconds: float, text: str) -> None:
    assert eta(seconds) == text
