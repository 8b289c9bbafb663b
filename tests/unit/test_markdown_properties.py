"""Markdown structure found two ways must agree: the shortcuts the read path takes (excerpts
on every search row) against the plain parse the indexer uses."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_mem.reads.excerpts import text_lines
from vault_mem.vault import markdown
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


def _plain_blank(text: str) -> str:
    return re.sub(r"[^\n\r]", " ", text)


def _plain_mask_code(body: str) -> str:
    """``mask_code`` as the indexer first wrote it: every line looked at, no shortcut."""
    out: list[str] = []
    fence: str | None = None
    for line in body.splitlines(keepends=True):
        m = markdown._FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append(_plain_blank(line))
                continue
            out.append(markdown._INLINE_CODE.sub(lambda mm: _plain_blank(mm.group(0)), line))
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(
                    m.group(1)):].strip():
                fence = None
            out.append(_plain_blank(line))
    return "".join(out)


def _plain_inline_tags(masked: str) -> list[str]:
    text = markdown._WIKILINK.sub(lambda m: _plain_blank(m.group(0)), masked)
    text = markdown._LINK_TARGET.sub(lambda m: _plain_blank(m.group(0)), text)
    text = re.sub(r"https?://\S+", lambda m: _plain_blank(m.group(0)), text)
    return [tag for m in markdown._INLINE_TAG.finditer(text) if (tag := m.group(1).rstrip("/-"))]


TAG_PIECES = st.sampled_from([
    "#", "#a", "#1", "#1a", "#_x", "#ü", "# ", "[[", "]]", "[[a#b]]", "](", ")", "](x#y)", "http://h/#t",
    "https://", "`", "```", "~~~", "a", " ", "\n", "\r", "\x85", "/", "-", "&", '"', "'", "é",
])


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.lists(TAG_PIECES, max_size=40).map("".join), st.text(max_size=200)))
def test_masking_and_inline_tags_take_their_shortcuts_without_changing_a_result(body: str) -> None:
    masked = markdown.mask_code(body)
    assert masked == _plain_mask_code(body)
    assert markdown.inline_tags(masked) == _plain_inline_tags(masked)
    assert markdown.inline_tags(body) == _plain_inline_tags(body)
