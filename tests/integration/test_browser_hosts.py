"""Browser-based MCP hosts (docs/clients.md, "Browser-based hosts"): a page served from another
origin calls ``/mcp`` with ``fetch`` in a real browser (headless Chromium, as test_ui_browser.py
launches it). An origin named with ``serve --http --allow-origin`` initializes, lists the tools and
calls one; an origin not named (another port, or the same address spelled ``localhost``) is
blocked; a preflight is answered without opening a session; the Host and Origin checks against
DNS rebinding still hold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import write_notes
from serving import Site, start_http
from test_ui_browser import CHROMIUM

from vault_mem.errors import InvalidInput
from vault_mem.mcp_server.cors import allowed_origin

TOKEN = "br0wser-token"
NOTES = {"alpha.md": "---\nid: alpha\ntitle: Alpha\n---\nThe first body.\n"}

# The page a browser host serves: the streamable HTTP protocol by hand, as a browser client speaks it.
HOST_PAGE = b"""<!doctype html><html><body><h1>host</h1><script>
async function mcp(url, token) {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + token};
  const post = async (body) => {
    const answer = await fetch(url, {method: "POST", headers, body: JSON.stringify(body)});
    const text = await answer.text();
    return {status: answer.status, session: answer.headers.get("mcp-session-id"), body: text ? JSON.parse(text) : null};
  };
  try {
    const init = await post({jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-06-18",
                             capabilities: {}, clientInfo: {name: "browser host", version: "1"}}});
    headers["mcp-session-id"] = init.session;
    headers["mcp-protocol-version"] = "2025-06-18";
    await post({jsonrpc: "2.0", method: "notifications/initialized"});
    const tools = await post({jsonrpc: "2.0", id: 2, method: "tools/list"});
    const call = await post({jsonrpc: "2.0", id: 3, method: "tools/call",
                             params: {name: "memory_read", arguments: {ref: "alpha"}}});
    return {session: init.session, tools: tools.body.result.tools.map((t) => t.name),
            call: call.body.result.structuredContent};
  } catch (e) {
    return {blocked: String(e)};
  }
}
async function unauthenticated(url) {
  try { return (await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                                  body: "{}"})).status; }
  catch (e) { return String(e); }
}
</script></body></html>"""

pytestmark = pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                                reason="no /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")


@pytest.fixture
def pages() -> Iterator[tuple[Site, Site]]:
    """The host page on two origins: the one named with --allow-origin, and another port."""
    named, other = Site({"/": HOST_PAGE}), Site({"/": HOST_PAGE})
    yield named, other
    named.stop()
    other.stop()


@pytest.fixture
def served(tmp_path: Path, pages: tuple[Site, Site]) -> Iterator[str]:
    named, _ = pages
    env = os.environ | {"VAULT_MEM_TOKEN": TOKEN}
    # Given as a person might type it (upper case, a trailing slash): compared as the browser sends it.
    proc, url = start_http(write_notes(tmp_path / "v", NOTES), cwd=tmp_path, env=env,
                           extra=("--allow-origin", f"HTTP://127.0.0.1:{named.port}/"))
    try:
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_named_origin_lists_and_calls_tools_from_a_browser_and_others_are_blocked(
        browser: Any, served: str, pages: tuple[Site, Site]) -> None:
    named, other = pages
    seen: dict[str, Any] = {}
    origins = {"named": f"http://127.0.0.1:{named.port}", "other port": f"http://127.0.0.1:{other.port}",
               "localhost": f"http://localhost:{named.port}"}
    for name, origin in origins.items():
        page = browser.new_page()
        page.goto(origin + "/")
        seen[name] = page.evaluate("([url, token]) => mcp(url, token)", [served, TOKEN])
        seen[name + " without token"] = page.evaluate("(url) => unauthenticated(url)", served)
        page.close()
    assert seen["named"]["session"], seen
    assert "memory_search" in seen["named"]["tools"] and "memory_read" in seen["named"]["tools"]
    assert seen["named"]["call"]["status"] == "ok" and seen["named"]["call"]["uid"] == "alpha"
    assert seen["named without token"] == 401, "a named origin's page can read the refusal, and why"
    for refused in ("other port", "localhost"):
        assert "Failed to fetch" in seen[refused]["blocked"], seen[refused]
        assert "Failed to fetch" in str(seen[refused + " without token"])


def test_a_preflight_is_answered_without_a_session_and_an_unnamed_origin_is_refused(
        served: str, pages: tuple[Site, Site]) -> None:
    named, other = pages
    asked = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}
    with httpx2.Client() as http:
        origin = f"http://127.0.0.1:{named.port}"
        preflight = http.options(served, headers={"Origin": origin, **asked})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == origin
        allowed = {h.strip() for h in preflight.headers["access-control-allow-headers"].split(",")}
        assert {"mcp-session-id", "mcp-protocol-version", "authorization", "content-type",
                "last-event-id"} <= allowed
        methods = {m.strip() for m in preflight.headers["access-control-allow-methods"].split(",")}
        assert {"POST", "GET", "DELETE"} <= methods
        assert "mcp-session-id" in preflight.headers["access-control-expose-headers"]
        assert preflight.headers["vary"] == "Origin"
        assert "mcp-session-id" not in preflight.headers, "a preflight opens no session"
        plain = http.options(served)
        assert plain.status_code == 204 and "mcp-session-id" not in plain.headers
        assert "access-control-allow-origin" not in plain.headers

        stranger = f"http://127.0.0.1:{other.port}"
        refused = http.options(served, headers={"Origin": stranger, **asked})
        assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
        assert "--allow-origin" in refused.json()["error"]["message"]
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "Authorization": f"Bearer {TOKEN}"}
        post = http.post(served, json=init, headers=headers | {"Origin": stranger})
        assert post.status_code == 403 and "mcp-session-id" not in post.headers
        # The named origin's own requests still pass the DNS-rebinding check of the Host header.
        rebinding = http.post(served, json=init, headers=headers | {"Origin": origin, "Host": "evil.example"})
        assert rebinding.status_code in (400, 403, 421) and "mcp-session-id" not in rebinding.headers
        ok = http.post(served, json=init, headers=headers | {"Origin": origin})
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == origin
        assert ok.headers["mcp-session-id"] and "mcp-session-id" in ok.headers["access-control-expose-headers"]


@pytest.mark.parametrize(("given", "origin"), [
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("HTTP://Host.Example:8080/", "http://host.example:8080"),
    ("https://host.example:443", "https://host.example"),
    ("http://[::1]:6274", "http://[::1]:6274"),
])
def test_an_origin_is_kept_as_a_browser_sends_it(given: str, origin: str) -> None:
    assert allowed_origin(given) == origin


@pytest.mark.parametrize(("given", "said"), [
    ("*", "name each origin"), ("null", "sandboxed"), ("http://*.example", "is not an origin"),
    ("127.0.0.1:8080", "is not an origin"), ("ftp://host.example", "is not an origin"),
    ("http://host.example/app", "is not an origin"), ("http://host.example?x=1", "is not an origin"),
    ("http://user@host.example", "is not an origin"), ("http://host.example:99999", "is not an origin"),
    ("", "is not an origin"),
])
def test_an_origin_that_is_not_one_is_refused_naming_the_option(given: str, said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        allowed_origin(given)
    assert refused.value.param == "--allow-origin" and said in refused.value.message
