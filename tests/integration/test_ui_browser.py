"""The page for people and the MCP Apps view in a real browser (docs/ui.md): headless Chromium
from the system's packages, driven by Playwright through ``executable_path``. A write made
through MCP shows in Activity with its diff and undoing it from the page restores the file
byte for byte while a person's later edit elsewhere stays; hostile titles, bodies and links
render as text and run nothing; an agent's page shows no note it may not read; every request
of the page carries its page secret, while the cookie alone (which the browser also hands to a
page of another local program, here on port 9999) opens nothing and logging out ends the session;
the MCP Apps view runs in a host page that speaks the protocol and shows a search answer.

With VAULT_MEM_SCREENSHOTS=1 each view is saved under docs/ui/ for docs/ui.md."""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import write_notes
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from serving import start_http

from vault_mem.served.keys import add_agent
from vault_mem.settings import Settings
from vault_mem.ui import mcp_app

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(__file__).resolve().parent.parent.parent / "docs" / "ui"
APPS = advertise("io.modelcontextprotocol/ui", {"mimeTypes": [mcp_app.MIME]})
HOSTILE = '<img src=x onerror="alert(1)">'
NOTES = {
    "alpha.md": "---\nid: alpha\ntitle: Alpha\ntags: [plan]\n---\nThe first body.\nSee [[Beta]].\n",
    "beta.md": "---\nid: beta\ntitle: Beta\n---\nThe second body.\n",
    "private/secret.md": "---\nid: secret\ntitle: Hidden plans\n---\nNot for the limited agent.\n",
    "shared/handoff.md": "---\nid: handoff\ntitle: Review the parser\nto: helper\nagent: coder\n---\nPlease look.\n",
}

pytestmark = pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                                reason="no /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")




class Server:
    """``vault-mem serve --http`` on a test vault: MCP at ``url``, the page at ``base``."""

    def __init__(self, root: Path, cwd: Path) -> None:
        self.root = root
        self.proc, self.url = start_http(root, cwd=cwd)
        self.base = self.url.removesuffix("/mcp")
        assert self.proc.stderr is not None
        self.login = ""
        while not self.login:
            line = self.proc.stderr.readline().decode()
            assert line, "the server ended before printing its login link"
            found = re.search(r"(http://\S+/\?login=[\w-]+)", line)
            self.login = found.group(1) if found else ""

    def call(self, tool: str, key: str | None = None, apps: bool = False, **arguments: Any) -> dict[str, Any]:
        async def run() -> dict[str, Any]:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            async with httpx2.AsyncClient(headers=headers) as http, Client(
                    streamable_http_client(self.url, http_client=http), extensions=[APPS] if apps else None) as client:
                if tool == "resources/read":
                    result = await client.read_resource(arguments["uri"])
                    return {"text": getattr(result.contents[0], "text", "")}
                answer = await client.call_tool(tool, arguments)
                return answer.model_dump(by_alias=True, exclude_none=True, mode="json")

        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # off the browser driver's event loop
            return pool.submit(anyio.run, run).result(timeout=60)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.communicate(timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(write_notes(tmp_path / "v", NOTES), tmp_path)
    try:
        yield running
    finally:
        running.stop()


def open_page(browser: Any, link: str, dialogs: list[str], width: int = 1280) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 820})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(link)
    page.wait_for_selector("#tabs:not([hidden])")
    return page


def shot(page: Any, name: str) -> None:
    if os.environ.get("VAULT_MEM_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def eventually_shown(page: Any, action: Callable[[], None], selector: str, text: str) -> None:
    """Repeat ``action`` (a reload of the view) until ``selector`` holds ``text``: the index catches up."""
    for _ in range(60):
        action()
        page.wait_for_timeout(250)
        if text in (page.text_content(selector) or ""):
            return
    raise AssertionError(f"{text!r} never showed in {selector}")


def test_an_mcp_write_shows_with_its_diff_and_undoing_it_keeps_a_persons_later_edit(
        browser: Any, server: Server) -> None:
    root = server.root
    original = (root / "alpha.md").read_bytes()
    server.call("memory_edit", agent="coder", ref="alpha", content="Rewritten by the coder.")
    server.call("memory_edit", agent="coder", ref="beta", append="The coder was here.")
    (root / "beta.md").write_bytes((root / "beta.md").read_bytes() + b"A person's later line.\n")
    beta_now = (root / "beta.md").read_bytes()
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.wait_for_selector("#changes li")
    assert page.locator("#changes li").count() == 2
    page.locator("#changes li", has_text="alpha.md").click()
    page.wait_for_selector("#change pre.diff")
    diff = page.text_content("#change pre.diff") or ""
    assert "-The first body." in diff and "+Rewritten by the coder." in diff
    assert page.locator("#change pre.diff .del").count() >= 1
    shot(page, "activity")
    page.locator("#changes li", has_text="beta.md").click()
    page.wait_for_selector("#change .undo-left")  # a person's later edit: shown, left alone
    page.locator("#changes li", has_text="alpha.md").click()
    page.click("#change .undo-one")
    page.wait_for_selector("#confirm:not([hidden])")
    shot(page, "undo")
    assert (root / "alpha.md").read_bytes() != original  # nothing before the confirmation
    page.click("#confirm-yes")
    page.locator("#status", has_text="put back 1 note").wait_for()
    assert (root / "alpha.md").read_bytes() == original
    assert (root / "beta.md").read_bytes() == beta_now
    page.set_viewport_size({"width": 420, "height": 820})  # a narrow window still reads
    assert page.locator("#changes li").first.is_visible()
    assert dialogs == []


def test_hostile_titles_bodies_and_links_render_as_text_and_run_nothing(browser: Any, server: Server) -> None:
    body = (f"{HOSTILE}\n</script><script>alert(2)</script>\n[click me](javascript:alert(3))\n"
            "[[</script><img src=y onerror=alert(4)>]]\n")
    wrote = server.call("memory_write", agent="coder", title=HOSTILE, content=body, tags=["<b>bold</b>"])
    assert wrote["structuredContent"]["status"] == "ok", wrote
    dialogs: list[str] = []
    page = open_page(browser, server.login, dialogs)
    page.wait_for_selector("#changes li")
    page.locator("#changes li").first.click()
    page.wait_for_selector("#change pre.diff")
    assert HOSTILE in (page.text_content("#change pre.diff") or "")
    page.click("#tabs button[data-view=search]")
    eventually_shown(page, lambda: page.click("#search button"),
                     "#results", HOSTILE)
    page.locator("#results li", has_text=HOSTILE).click()
    page.wait_for_selector("#note h2")
    assert page.text_content("#note h2") == HOSTILE
    note = page.text_content("#note") or ""
    assert "</script><script>alert(2)</script>" in note and "<b>bold</b>" in note
    assert page.locator("#note a[href^='javascript']").count() == 0
    assert page.locator("img").count() == 0
    assert [s.get_attribute("src") for s in page.locator("script").all()] == ["/static/markdown.js", "/static/app.js"]
    assert dialogs == []


def test_a_limited_agents_page_shows_no_note_it_may_not_read(browser: Any, server: Server, tmp_path: Path) -> None:
    server.call("memory_edit", agent="coder", ref="secret", append="A secret change.")
    server.call("memory_edit", agent="coder", ref="handoff", append="More for the helper.")
    _, key = add_agent(server.root.resolve(), "helper", ["shared/"], [], False, config=Settings())
    dialogs: list[str] = []
    page = browser.new_page(viewport={"width": 1280, "height": 820})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.base + "/")
    page.wait_for_selector("#login:not([hidden])")
    page.fill("input[name=secret]", key)
    page.click("#login button[type=submit]")
    page.wait_for_selector("#tabs:not([hidden])")
    assert "as agent helper" in (page.text_content("#who") or "")
    page.wait_for_selector("#changes li")
    assert [t.strip() for t in page.locator("#changes li .path").all_text_contents()] == ["shared/handoff.md"]
    assert page.locator("#undo-window").is_hidden()
    page.click("#tabs button[data-view=inbox]")
    page.wait_for_selector(".inbox li")
    assert "Review the parser" in (page.text_content("#inboxes") or "")
    shot(page, "inbox")
    page.click("#tabs button[data-view=search]")
    page.wait_for_selector("#results li")
    page.fill("#search input[name=query]", "plans")
    page.click("#search button")
    page.wait_for_timeout(300)
    page.fill("#search input[name=query]", "")
    page.click("#search button")
    page.wait_for_selector("#results li .meta")
    everything = page.text_content("body") or ""
    assert "Hidden plans" not in everything and "secret" not in everything.lower().replace("secret\"", "")
    page.click("#tabs button[data-view=agents]")
    page.wait_for_selector("#agents tbody tr")
    assert key not in (page.content())
    assert dialogs == []


HOST = """<!doctype html><html><body><h1>test host</h1><iframe id="app" sandbox="allow-scripts"
style="width:600px;height:400px"></iframe><script>
const frame = document.getElementById("app");
window.log = [];
window.cancelled = null;  // set to a reason: the model's call is cancelled instead of answered
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const msg = event.data; window.log.push(msg.method || "response");
  const reply = (result) => frame.contentWindow.postMessage({jsonrpc: "2.0", id: msg.id, result}, "*");
  if (msg.method === "ui/initialize") {
    window.initialize = msg.params;
    reply({protocolVersion: "2026-01-26", hostInfo: {name: "test host", version: "1"}, hostCapabilities: {},
           hostContext: {theme: "light", displayMode: "inline", availableDisplayModes: ["inline", "fullscreen"]}});
  } else if (msg.method === "ui/notifications/initialized") {
    const send = (method, params) => frame.contentWindow.postMessage({jsonrpc: "2.0", method, params}, "*");
    send("ui/notifications/tool-input", {arguments: window.toolInput});
    if (window.cancelled !== null) send("ui/notifications/tool-cancelled", {reason: window.cancelled});
    else send("ui/notifications/tool-result", window.toolResult);
  } else if (msg.method === "tools/call") {
    reply(await window.callTool(msg.params.name, msg.params.arguments));
  }
});
</script></body></html>"""


def test_the_mcp_apps_view_shows_a_search_answer_in_a_host_that_speaks_the_protocol(
        browser: Any, server: Server) -> None:
    tools = server.call("memory_search", apps=True, agent="coder", query="first body")
    assert tools["structuredContent"]["status"] == "ok", tools
    html = server.call("resources/read", apps=True, uri=mcp_app.URI)["text"]
    dialogs: list[str] = []
    page = browser.new_page(viewport={"width": 700, "height": 500})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.expose_function("callTool", lambda name, arguments: server.call(name, apps=True, **arguments))
    page.set_content(HOST)
    page.evaluate("([input, result]) => { window.toolInput = input; window.toolResult = result; }",
                  [{"agent": "coder", "query": "first body"}, tools])
    page.evaluate("(html) => { document.getElementById('app').srcdoc = html; }", html)
    view = page.frame_locator("#app")
    view.get_by_text("Alpha", exact=True).wait_for()
    assert view.locator("#search input").input_value() == "first body"
    shot(page, "mcp-app")
    view.locator("#search input").fill("second")
    view.locator("#search button").click()
    view.get_by_text("Alpha", exact=True).wait_for(state="detached")  # asked through the host's tools/call
    view.get_by_text("Beta", exact=True).wait_for()
    log = page.evaluate("window.log")
    assert log[:2] == ["ui/initialize", "ui/notifications/initialized"] and "tools/call" in log
    assert json.dumps(dialogs) == "[]"
    # SEP-1865: "View MUST declare all display modes it supports in appCapabilities.availableDisplayModes".
    assert page.evaluate("window.initialize.appCapabilities") == {"availableDisplayModes": ["inline"]}
    assert "ui/request-display-mode" not in log



EVIL = """<!doctype html><html><body><p>another program's page</p><script>
window.results = [];
(async () => {
  const tries = [["/api/session", {}], ["/api/session", {headers: {"X-Page-Secret": "x"}}],
                 ["/api/undo", {method: "POST", body: "{}", headers: {"Content-Type": "text/plain"}}]];
  for (const [path, options] of tries) {
    try {
      const answer = await fetch(window.TARGET + path, {credentials: "include", ...options});
      window.results.push(answer.status + " " + await answer.text());
    } catch (e) { window.results.push("refused"); }
  }
  window.results.push("stored: " + JSON.stringify({...sessionStorage}) + JSON.stringify({...localStorage}));
  window.done = true;
})();
</script></body></html>"""


def test_the_pages_requests_carry_its_page_secret_and_its_cookie_alone_opens_nothing(
        browser: Any, server: Server) -> None:
    dialogs: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 820})
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sent: list[tuple[str, dict[str, str]]] = []
    page.on("request", lambda r: sent.append((r.url, r.headers)) if "/api/" in r.url else None)
    page.goto(server.login)
    page.wait_for_selector("#changes")
    page.wait_for_selector("#tabs:not([hidden])")
    assert page.url == server.base + "/"  # the code left the address bar
    secret = page.evaluate("sessionStorage.getItem('vault-mem-page-secret')")
    assert isinstance(secret, str) and len(secret) >= 32
    page.click("#tabs button[data-view=agents]")
    page.wait_for_selector("#agents tbody tr")
    calls = [(url, headers) for url, headers in sent if not url.endswith("/api/login")]
    assert len(calls) >= 3 and all(headers.get("x-page-secret") == secret for _, headers in calls), calls
    page.reload()  # the tab keeps its session
    page.wait_for_selector("#tabs:not([hidden])")
    cookie = next(c for c in page.context.cookies() if c["name"] == "vault_mem_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.context.request.get(server.base + "/api/session").status == 401  # the cookie alone
    assert page.context.request.get(server.base + "/api/session", headers={"X-Page-Secret": secret}).status == 200

    reached: list[dict[str, str]] = []

    def other_program(route: Any) -> None:
        reached.append(route.request.all_headers())
        route.fulfill(status=200, content_type="text/html", body=EVIL)

    page.context.route("http://127.0.0.1:9999/**", other_program)
    evil = page.context.new_page()  # the same browser, another program's port
    evil.add_init_script(f"window.TARGET = {json.dumps(server.base)};")
    evil.goto("http://127.0.0.1:9999/")
    evil.wait_for_function("window.done === true")
    results = evil.evaluate("window.results")
    assert results[:3] == ["refused"] * 3, results  # nothing it can read, and no secret in its storage
    assert secret not in json.dumps(results) and cookie["value"] not in json.dumps(results)
    assert f"vault_mem_session={cookie['value']}" in reached[0].get("cookie", "")  # the browser gave it the cookie
    other_tab = page.context.new_page()  # a new tab of the page: the cookie is there, its secret is not
    other_tab.goto(server.base + "/")
    other_tab.wait_for_selector("#login:not([hidden])")
    assert other_tab.locator("#tabs").is_hidden()

    page.click("#logout")
    page.wait_for_selector("#login:not([hidden])")
    gone = page.context.request.get(server.base + "/api/session", headers={
        "X-Page-Secret": secret, "Cookie": f"vault_mem_session={cookie['value']}"})
    assert gone.status == 401  # logging out ended the session on the server
    assert dialogs == []
    context.close()

def test_the_mcp_apps_view_says_when_the_models_call_was_cancelled_and_still_searches(
        browser: Any, server: Server) -> None:
    html = server.call("resources/read", apps=True, uri=mcp_app.URI)["text"]
    page = browser.new_page(viewport={"width": 700, "height": 500})
    page.expose_function("callTool", lambda name, arguments: server.call(name, apps=True, **arguments))
    page.set_content(HOST)
    page.evaluate("() => { window.toolInput = {agent: 'coder', query: 'first body'}; "
                  "window.cancelled = 'user action'; }")
    page.evaluate("(html) => { document.getElementById('app').srcdoc = html; }", html)
    view = page.frame_locator("#app")
    view.get_by_text("The model's search was cancelled (user action). Ask a search.").wait_for()
    assert "wait for the model" not in (view.locator("#summary").text_content() or "")
    assert view.locator("#results li").count() == 0
    view.locator("#search button").click()  # the query the model had typed, asked by the person
    view.get_by_text("Alpha", exact=True).wait_for()
    assert "tools/call" in page.evaluate("window.log")
