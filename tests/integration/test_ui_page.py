"""The page for people in Chromium (docs/ui.md), for what it tells and how it shows it: Agents lists
every agent the journal names beside every key; Activity shows each note's title beside its path,
as text; a change whose version a person's edit replaced says so, not "past its limits"; a body's
Markdown renders, while hostile markup, entities and links stay inert text; and at 420 px the
status bar never covers the list. tests/integration/test_ui_journal.py checks the same answers
without a browser; tests/integration/test_ui_browser.py holds the page's other browser tests."""

from __future__ import annotations

import concurrent.futures
import json
import random
import re
from typing import Any

import anyio
import httpx2
import pytest
import test_ui_browser
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_ui_browser import CHROMIUM, HOSTILE, Server, eventually_shown, open_page, shot

from vault_mem.served.keys import add_agent
from vault_mem.settings import Settings

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")


server = test_ui_browser.server  # the fixture: ``vault-mem serve --http`` on the page tests' vault


def calls(server: Server, steps: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several tool calls in one MCP session over HTTP, in order: their structured answers."""
    async def run() -> list[dict[str, Any]]:
        answers = []
        async with httpx2.AsyncClient() as http, Client(streamable_http_client(server.url, http_client=http)) as client:
            for tool, arguments in steps:
                result = await client.call_tool(tool, arguments)
                answer = result.structured_content or {}
                assert answer.get("status") == "ok", (tool, answer)
                answers.append(answer)
        return answers

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # off the browser driver's event loop
        return pool.submit(anyio.run, run).result(timeout=120)


def test_agents_shows_every_agent_the_journal_names_with_its_key_if_any(browser: Any, server: Server) -> None:
    calls(server, [("memory_edit", {"agent": "coder", "ref": "alpha", "append": "by the coder"}),
                   ("memory_edit", {"agent": "planner", "ref": "beta", "append": "by the planner"}),
                   ("memory_write", {"agent": "evil", "title": "Evil plan", "content": "by evil"}),
                   ("memory_edit", {"agent": "EVIL", "ref": "Evil plan", "append": "again"})])
    add_agent(server.root.resolve(), "planner", ["**"], ["**"], False, config=Settings())
    add_agent(server.root.resolve(), "reviewer", [], [], True, config=Settings())  # a key, and nothing in the journal
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.click("#tabs button[data-view=agents]")
    page.wait_for_selector("#agents tbody tr td")
    rows = page.evaluate("[...document.querySelectorAll('#agents tbody tr')]"
                         ".map(r => [...r.cells].map(c => c.textContent))")
    by_name = {row[0]: row for row in rows}
    assert list(by_name) == ["coder", "EVIL", "planner", "reviewer"], rows
    assert by_name["coder"][1:7] == ["no key: it named itself in its calls", "—", "—", "—", "—", "1 (edit 1)"]
    assert by_name["EVIL"][6] == "2 (write 1, edit 1)"
    assert by_name["planner"][1:5] == ["yes", "**", "**", "no"] and by_name["planner"][6] == "1 (edit 1)"
    assert by_name["reviewer"][1] == "yes" and by_name["reviewer"][4] == "yes"
    assert by_name["reviewer"][6:] == ["none in the journal", "—"]
    assert "No agent" not in (page.text_content("#agents") or "")
    shot(page, "agents")
    assert dialogs == []


def test_activity_shows_each_notes_title_beside_its_path_as_text(browser: Any, server: Server) -> None:
    calls(server, [("memory_edit", {"agent": "coder", "ref": "alpha", "append": "one"}),
                   ("memory_edit", {"agent": "coder", "ref": "alpha", "set": {"title": "Alpha, renamed"}}),
                   ("memory_delete", {"agent": "coder", "ref": "beta"}),
                   ("memory_write", {"agent": "evil", "title": HOSTILE, "content": "x"})])
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.wait_for_selector("#changes li .title")
    rows = page.evaluate("[...document.querySelectorAll('#changes li')].map(li => "
                         "[li.querySelector('.title')?.textContent, li.querySelector('.path').textContent])")
    assert [title for title, _ in rows] == [HOSTILE, "Beta", "Alpha, renamed", "Alpha"], rows
    assert [path for _, path in rows][1:] == ["beta.md", "alpha.md", "alpha.md"]  # beta: deleted since, titled still
    assert page.locator("#changes img").count() == 0 and page.evaluate("window.pwned") is None
    assert dialogs == []


def test_a_note_edited_by_hand_after_an_agents_change_says_so_not_past_the_journals_limits(
        browser: Any, server: Server) -> None:
    server.call("memory_edit", agent="coder", ref="alpha", content="The coder's words.")
    (server.root / "alpha.md").write_text("---\nid: alpha\ntitle: Alpha\n---\nA person's words.\n", encoding="utf-8")
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.locator("#changes li", has_text="alpha.md").click()
    page.wait_for_selector("#change .undo-left")
    said = page.text_content("#change") or ""
    assert "the file was changed since by hand (or by another program), last at" in said, said
    assert "past its limits" not in said
    assert page.locator("#change pre.diff").count() == 0
    assert dialogs == []


BODY = """# Decision record

**Decision.** We ship *on Friday*, with ***both*** and **bold *inside* bold**; snake_case_names stay.

> A quote with `inline <code>`.

- first
- second with [[Beta]]
  1. nested one

| Field | Value |
|---|--:|
| owner | **coder** |

```
<script>window.pwned = "fenced"</script>
```

<script>window.pwned = "raw"</script>
<img src=x onerror="window.pwned = 'img'; alert('img')">
[click](javascript:window.pwned='js') [caps](JaVaScRiPt:alert(1)) [spaced]( javascript:alert(1) ) <javascript:alert(2)>
[data](data:text/html,<script>alert(3)</script>) [web](https://example.com/a "t") [mail](mailto:a@example.com)
[the alpha note](alpha.md)
&lt;b&gt;not bold&lt;/b&gt; &#60;script&#62; &amp;amp;
<a href="javascript:alert(4)">html link</a> <b onmouseover=alert(5)>raw b</b>
"""


def test_a_body_renders_its_markdown_and_nothing_in_it_runs(browser: Any, server: Server) -> None:
    wrote = server.call("memory_write", agent="coder", title="Design", content=BODY)
    assert wrote["structuredContent"]["status"] == "ok", wrote
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.click("#tabs button[data-view=search]")
    eventually_shown(page, lambda: page.click("#search button"), "#results", "Design")
    page.locator("#results li", has_text="Design").click()
    page.wait_for_selector("#note table.fm")
    assert page.locator("#note strong").all_text_contents()[:1] == ["Decision."]  # not **Decision.** as written
    assert page.locator("#note h2").all_text_contents() == ["Design", "Decision record"]  # the title, then the body's
    note = page.locator("#note .body")
    assert note.locator("em", has_text="on Friday").count() == 1
    assert note.locator("em > strong", has_text="both").count() == 1
    assert note.locator("strong > em", has_text="inside").count() == 1
    assert "snake_case_names" in (note.text_content() or "")
    assert note.locator("blockquote code").text_content() == "inline <code>"
    assert note.locator("ul > li > ol > li").text_content() == "nested one"
    assert note.locator("table td.align-right strong").text_content() == "coder"
    assert note.locator("pre code").text_content() == '<script>window.pwned = "fenced"</script>'
    text = note.text_content() or ""
    for shown in ('<script>window.pwned = "raw"</script>', "<img src=x onerror=",
                  "[click](javascript:window.pwned='js')", "[caps](JaVaScRiPt:alert(1))",
                  "[spaced]( javascript:alert(1) )", "<javascript:alert(2)>",
                  "[data](data:text/html,<script>alert(3)</script>)",
                  "&lt;b&gt;not bold&lt;/b&gt; &#60;script&#62; &amp;amp;",
                  '<a href="javascript:alert(4)">html link</a>', "<b onmouseover=alert(5)>raw b</b>"):
        assert shown in text, shown
    links = page.evaluate("[...document.querySelectorAll('#note .body a')].map(a => "
                          "[a.textContent, a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')])")
    assert links == [["Beta", "#", None, None],
                     ["web", "https://example.com/a", "_blank", "noopener noreferrer"],
                     ["mail", "mailto:a@example.com", "_blank", "noopener noreferrer"],
                     ["the alpha note", "#", None, None]], links
    handlers = page.evaluate("[...document.querySelectorAll('#note *')].flatMap(e => [...e.attributes])"
                             ".map(a => a.name).filter(n => n.startsWith('on') || n === 'style' || n === 'src')")
    assert handlers == []
    assert page.locator("img, iframe, object, embed").count() == 0
    assert page.locator("script").count() == 2  # the page's own two
    shot(page, "hostile")
    page.locator("#note .body a", has_text="Beta").click()  # a wikilink opens the note in the page
    page.locator("#note > h2").get_by_text("Beta", exact=True).wait_for()
    page.locator("#results li", has_text="Design").click()
    page.locator("#note .body a", has_text="the alpha note").click()  # a relative link to a note: the same
    page.locator("#note > h2").get_by_text("Alpha", exact=True).wait_for()
    assert page.url == server.base + "/"
    assert page.evaluate("window.pwned") is None and dialogs == []


def visible_overlaps(page: Any, items: str) -> dict[str, Any]:
    """How many of ``items`` show (their box as cut by every scrolling ancestor and the window) and
    how many of those the status message's boxes cross."""
    return page.evaluate("""(items) => {
      const cut = (a, b) => ({l: Math.max(a.l, b.left), t: Math.max(a.t, b.top),
                              r: Math.min(a.r, b.right), b: Math.min(a.b, b.bottom)});
      const shown = (el) => {
        const r = el.getBoundingClientRect();
        let box = {l: r.left, t: r.top, r: r.right, b: r.bottom};
        for (let a = el.parentElement; a; a = a.parentElement) {
          const s = getComputedStyle(a);
          if (s.overflowX !== "visible" || s.overflowY !== "visible") box = cut(box, a.getBoundingClientRect());
        }
        return cut(box, {left: 0, top: 0, right: innerWidth, bottom: innerHeight});
      };
      const boxes = ["#status", "#status-bar"].map((s) => document.querySelector(s)).filter(Boolean)
        .map((e) => e.getBoundingClientRect()).filter((r) => r.width && r.height);
      const seen = [...document.querySelectorAll(items)].map(shown).filter((b) => b.r > b.l && b.b > b.t);
      const crossed = seen.filter((b) => boxes.some((s) => b.l < s.right && s.left < b.r
                                                        && b.t < s.bottom && s.top < b.b));
      return {seen: seen.length, crossed: crossed.length, height: innerHeight,
              status: boxes.map((s) => [s.top, s.bottom])};
    }""", items)


def test_at_420px_the_status_never_covers_the_list_and_can_be_dismissed(browser: Any, server: Server) -> None:
    calls(server, [("memory_write", {"agent": "coder", "title": f"Note number {k}", "content": f"body {k}"})
                   for k in range(24)])
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs, width=420)
    page.set_viewport_size({"width": 420, "height": 800})
    page.wait_for_selector("#changes li >> nth=23")
    page.fill("#filters input[name=since]", "not a moment at all, and a long message to show")
    page.click("#filters button[type=submit]")
    page.locator("#status", has_text="is not a moment").wait_for()
    items = page.locator("#changes li")
    for k in (0, 5, 12, 18, 23):  # each in turn at the bottom of what shows, where a toast sits
        items.nth(k).evaluate("li => li.scrollIntoView({block: 'end'})")
        found = visible_overlaps(page, "#changes li")
        assert found["seen"] >= 3 and found["crossed"] == 0, (k, found)
        assert all(0 <= top < bottom <= found["height"] for top, bottom in found["status"]), found  # and it shows
    shot(page, "narrow")
    page.click("#status-close")
    assert page.locator("#status").is_hidden()
    page.fill("#filters input[name=since]", "")
    page.click("#filters button[type=submit]")
    page.locator("#changes li >> nth=23").wait_for()
    assert json.dumps(dialogs) == "[]"


FRAGMENTS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "javascript:alert(3)", "JaVaScRiPt:",
             "data:text/html,x", "vbscript:x", "https://example.com/", "mailto:a@b.c", "[", "]", "(", ")", "[[", "]]",
             "|", "`", "```", "*", "**", "_", "__", "~~", "\\", "<", ">", "&lt;", "&#x3C;", "&amp;", "\"", "'",
             " ", "  ", "\t", "\n", "\n\n", "# ", "> ", "- ", "1. ", "---", "|---|", "x", "word", "![", "](",
             "onerror=", "style=", "<a href=", "<svg onload=alert(4)>", "\u202e", "\u0000"]


def test_hostile_bodies_from_pieces_make_only_the_renderers_own_elements(browser: Any, server: Server) -> None:
    """Bodies stitched from pieces of markup, Markdown and links, rendered by the page's own
    renderer in the page: only its fixed tags, only its attributes, only safe addresses; nothing runs."""
    rng = random.Random(56)
    bodies = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 60))) for _ in range(400)]
    dialogs: list[str] = []
    page = browser.new_page(viewport={"width": 1280, "height": 820})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.base + "/")
    page.wait_for_selector("#login:not([hidden])")
    found = page.evaluate("""(bodies) => {
      const tags = new Set(), attrs = new Set(), hrefs = new Set();
      for (const body of bodies) {
        const box = document.createElement("div");
        box.append(...window.vaultMarkdown.render(body, {open: () => {}, here: "a/b.md"}));
        document.body.append(box);
        for (const e of box.querySelectorAll("*")) {
          tags.add(e.tagName.toLowerCase());
          for (const a of e.attributes) { attrs.add(a.name); if (a.name === "href") hrefs.add(a.value); }
        }
        box.remove();
      }
      return {tags: [...tags], attrs: [...attrs], hrefs: [...hrefs], pwned: window.pwned === undefined ? null : 1};
    }""", bodies)
    allowed = {"p", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li",
               "blockquote", "hr", "div", "table", "thead", "tbody", "tr", "th", "td"}
    assert set(found["tags"]) <= allowed, found["tags"]
    assert set(found["attrs"]) <= {"href", "target", "rel", "class", "start"}, found["attrs"]
    assert all(h == "#" or re.match(r"(https?:|mailto:)", h, re.I) for h in found["hrefs"]), found["hrefs"]
    assert "a" in found["tags"] and "strong" in found["tags"]  # the pieces did make links and emphasis
    assert found["pwned"] is None and dialogs == []
