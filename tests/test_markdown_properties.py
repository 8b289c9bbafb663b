"""Markdown structure found two ways must agree: the shortcuts the read path takes (excerpts
on every search row) against the plain parse the indexer uses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_mem.reads.excerpts import text_lines
from vault_mem.vault.markdown import heading_spans, headings

# Lines built from the pieces that decide a heading: '#' runs, fences of both kinds and
# lengths (indented too), inline code, and every line break str.splitlines knows.
PIECES = st.sampled_from([
    "#", "##", "###### ", "# ", "#x", " # h", "\t#", "```", "````", "~~~", "  ```py", "`", "``", "`#`",
    "a", "word", " ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "#\x0b",
])
BODIES = st.lists(PIECES, max_size=40).map("".join)


@settings(max_examples=3000, deadline=None)
@given(BODIES)
def test_heading_spans_are_the_headings_of_the_masked_parse(body: str) -> None:
    assert heading_spans(body) == [(h.start, h.end) for h in headings(body)]


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_heading_spans_agree_on_any_text(body: str) -> None:
    assert heading_spans(body) == [(h.start, h.end) for h in headings(body)]


def test_text_lines_leave_out_headings_outside_code_only() -> None:
    body = "# Title\n\nsome text\n```\n# not a heading\n```\n## Part\nmore `# x` text\n"
    assert text_lines(body) == "some text ``` # not a heading ``` more `# x` text"


def test_a_fence_line_ending_in_a_vertical_tab_runs_into_the_next_line() -> None:
    body = "```\ncode\n```\x0b# stays text\n# Gone\nend"
    assert heading_spans(body) == [(h.start, h.end) for h in headings(body)] == [(body.index("# Gone"), len(body) - 3)]
