"""A real browser MCP Apps host (docs/clients.md, "Browser-based hosts"; docs/ui.md, "Inside MCP
clients"): tests/browser_host/host.js, built on the npm packages a web host uses (the TypeScript
SDK's Client over streamable HTTP, ext-apps' AppBridge, ajv) at the versions package-lock.json
pins, installed with ``npm ci`` and bundled with esbuild at test time, runs in headless Chromium
from a page on another origin than ``serve --http``.

With that origin named by ``--allow-origin`` it lists every tool and calls each one, and every
answer validates against the output schema its tool was listed with (the SDK's ajv and a strict
ajv of the host's own); it renders memory_search's view in a sandbox proxy on a third origin,
and the view passes the MUSTs of the MCP Apps spec (SEP-1865) that apply to a view (the table in
docs/ui.md names the assertion for each). From an origin not named the same host is refused: the
browser's fetch fails on CORS. No step is skipped in CI: without node, npm or the npm registry the
tests fail saying which."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write_notes
from playwright.sync_api import expect
from serving import Site, start_http
from test_ui_browser import CHROMIUM

from vault_mem.ui import mcp_app

HOST_SOURCE = Path(__file__).resolve().parent.parent / "browser_host"
TOKEN = "apps-h0st-token"
NOTES = {
    "alpha.md": "---\nid: alpha\ntitle: Alpha plan\ntags: [plan]\n---\nThe first body, about the parser.\n",
    "beta.md": "---\nid: beta\ntitle: Beta\n---\nThe second body.\n",
    "work/task.md": "---\nid: task1\ntitle: Review the parser\ntype: task\n---\nPlease look.\n",
}
# Every tool a client gets (without --compat), called once with arguments a model would send.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_search", {"agent": "coder", "query": "parser"}),
    ("list_domains", {}),
    ("list_by_domain", {"domain": "work"}),
    ("mem_recall", {"since": "2000-01-01"}),
    ("memory_list", {"query": "body", "tags_any": ["plan"]}),
    ("memory_read", {"ref": "alpha"}),
    ("memory_write", {"agent": "coder", "title": "Browser note", "content": "Written from a web page.",
                      "tags": ["web"]}),
    ("memory_edit", {"agent": "coder", "ref": "beta", "append": "One more line."}),
    ("task_close", {"agent": "coder", "ref": "task1", "state": "completed"}),
    ("memory_supersede", {"agent": "coder", "ref": "alpha", "title": "Alpha plan, second",
                          "content": "The parser plan, revised."}),
    ("memory_delete", {"agent": "coder", "ref": "beta"}),
]

pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and not (CHROMIUM.exists() and shutil.which("npm")),
    reason="needs /usr/bin/chromium and node with npm (.ci/run installs both)")


def run(command: list[str], cwd: Path, hint: str) -> None:
    """Run ``command``; fail the test loudly with its output and ``hint`` when it fails (never a skip)."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"{' '.join(command)} could not run: {e} (node and npm are needed; .ci/run installs them)")
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed ({done.returncode}); {hint}:\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


@pytest.fixture(scope="session")
def host_bundle(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """host.js and its packages, as package-lock.json pins them, bundled into one script: each
    test process installs into its own folder (the source tree stays as committed)."""
    folder = tmp_path_factory.mktemp("browser_host")
    for name in ("package.json", "package-lock.json", "host.js"):
        shutil.copy(HOST_SOURCE / name, folder / name)
    npm = shutil.which("npm") or "npm"
    run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], folder,
        "npm installs the packages package-lock.json pins from the npm registry, which must be reachable")
    build = ("require('esbuild').buildSync({entryPoints: ['host.js'], bundle: true, format: 'iife', "
             "platform: 'browser', logLevel: 'warning', outfile: 'host.bundle.js'})")
    run([shutil.which("node") or "node", "-e", build], folder, "esbuild bundles host.js for the browser")
    bundle = (folder / "host.bundle.js").read_bytes()
    shutil.rmtree(folder / "node_modules", ignore_errors=True)  # 50 MB a test process, not kept
    return bundle


class Sites:
    def __init__(self, bundle: bytes) -> None:
        host = {"/": (HOST_SOURCE / "host.html").read_bytes(), "/host.js": bundle}
        self.named, self.unnamed = Site(host), Site(host)  # the host's page, on two origins
        self.sandbox = Site({"/sandbox.html": (HOST_SOURCE / "sandbox.html").read_bytes()})

    def stop(self) -> None:
        for site in (self.named, self.unnamed, self.sandbox):
            site.stop()


@pytest.fixture
def sites(host_bundle: bytes) -> Iterator[Sites]:
    running = Sites(host_bundle)
    yield running
    running.stop()


@pytest.fixture
def served(tmp_path: Path, sites: Sites) -> Iterator[str]:
    env = os.environ | {"VAULT_MEM_TOKEN": TOKEN}
    proc, url = start_http(write_notes(tmp_path / "v", NOTES), cwd=tmp_path, env=env,
                           extra=("--allow-origin", sites.named.origin))
    try:
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


class Watched:
    """A page of the host, with what its frames asked of the network and said on the console."""

    def __init__(self, browser: Any, origin: str) -> None:
        self.page = browser.new_page(viewport={"width": 900, "height": 900})
        self.requests: list[tuple[Any, str]] = []  # (the frame that asked, the request's URL)
        self.console: list[str] = []
        self.page.on("request", lambda r: self.requests.append((r.frame, r.url)))
        self.page.on("console", lambda m: self.console.append(m.text))
        self.page.goto(origin + "/")
        self.page.wait_for_function("() => window.vaultHost !== undefined")

    def host(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(f"(arg) => {script}", arg)

    def view(self) -> Any:
        """The view's frame: the sandbox proxy's inner frame (its document comes from srcdoc)."""
        frames = [f for f in self.page.frames if f.parent_frame and f.parent_frame.url.endswith("/sandbox.html")]
        assert len(frames) == 1, [f.url for f in self.page.frames]
        return frames[0]


def connected(browser: Any, sites: Sites, served: str) -> Watched:
    watched = Watched(browser, sites.named.origin)
    names = watched.host("window.vaultHost.connect(arg[0], arg[1])", [served, TOKEN])
    assert sorted(names) == sorted(name for name, _ in CALLS), names
    return watched


def test_a_host_on_a_named_origin_calls_every_tool_and_one_not_named_is_refused(
        browser: Any, sites: Sites, served: str) -> None:
    watched = connected(browser, sites, served)
    for name, arguments in CALLS:
        answer = watched.host("window.vaultHost.call(arg[0], arg[1]).then((r) => r.structuredContent)",
                              [name, arguments])
        assert answer["status"] == "ok", (name, answer)
    checks = watched.host("window.vaultHost.answers")
    assert [c["name"] for c in checks] == [name for name, _ in CALLS]
    for check in checks:
        assert check["schema"], f"{check['name']} was listed without an output schema"
        assert check["valid"], f"{check['name']}: {check['errors']}"
    watched.page.close()

    # The same host page from an origin the server was not told of: the browser refuses it.
    refused = Watched(browser, sites.unnamed.origin)
    error = refused.host("window.vaultHost.connect(arg[0], arg[1]).then(() => 'connected', (e) => String(e))",
                         [served, TOKEN])
    assert error != "connected"
    assert "Failed to fetch" in error, error
    assert any("blocked by CORS policy" in line and sites.unnamed.origin in line for line in refused.console), \
        refused.console
    refused.page.close()


def test_the_search_view_runs_through_the_app_bridge_and_keeps_the_views_musts(
        browser: Any, sites: Sites, served: str) -> None:
    watched = connected(browser, sites, served)
    sandbox = sites.sandbox.origin + "/sandbox.html"
    context = {"theme": "light", "displayMode": "inline", "availableDisplayModes": ["inline", "fullscreen"],
               "containerDimensions": {"width": 420, "maxHeight": 800}, "platform": "web"}
    shown = watched.host("window.vaultHost.render('memory_search', arg[0], arg[1])", [sandbox, context])
    # The resource: a ui:// URI, the MCP Apps MIME type; ui/initialize carried appCapabilities
    # naming every display mode the view supports (AppBridge checked the request's shape).
    assert shown["uri"] == mcp_app.URI and shown["uri"].startswith("ui://")
    assert shown["mimeType"] == "text/html;profile=mcp-app"
    assert shown["appCapabilities"] == {"availableDisplayModes": ["inline"]}
    assert shown["appInfo"]["name"] == "vault-mem"
    view = watched.view()
    assert view.evaluate("document.compatMode") == "CSS1Compat", "the view is an HTML5 document (standards mode)"
    assert view.evaluate("document.doctype && document.doctype.name") == "html"

    # Its size once the handshake is done (a host sizing the frame to the content needs it).
    expect(view.locator("#summary")).to_have_text("Ask a search, or wait for the model's.")
    watched.page.wait_for_function("() => window.vaultHost.sizes.length >= 1")

    # The model's call: partial arguments (the view must not act on them), then the input, then
    # the result; the view shows the notes and reports its new size. The answer carries a text
    # block too, the same answer, for hosts that show no view.
    result = watched.host("window.vaultHost.modelCall(0, 'memory_search', arg[0], arg[1])",
                          [{"agent": "coder", "query": "parser"}, {"agent": "coder", "query": "pa"}])
    answer = result["structuredContent"]
    assert answer["status"] == "ok" and answer["notes"]
    assert [block["type"] for block in result["content"]] == ["text"]
    assert json.loads(result["content"][0]["text"]) == answer
    expect(view.locator("#results li").first).to_be_visible()
    titles = view.locator("#results li .title").all_text_contents()
    assert titles == [note["title"] for note in answer["notes"]]
    assert view.locator("#search input").input_value() == "parser", "tool-input, not the partial, fills the query"
    assert watched.host("window.vaultHost.log") == [], "the view acted on nothing but the final input and result"
    watched.page.wait_for_function("(h) => window.vaultHost.sizes.some((s) => s.height > h)",
                                   arg=watched.host("window.vaultHost.sizes[0].height"))
    sizes, frame_height = watched.host("[window.vaultHost.sizes, document.querySelector('iframe').style.height]")
    assert all(s["view"] == 0 and s["height"] > 0 and s["width"] > 0 for s in sizes), sizes
    assert all(a != b for a, b in itertools.pairwise(sizes)), f"only changes are reported: {sizes}"
    assert frame_height == f"{sizes[-1]['height']}px", "the host sized its frame to the view"

    # A search typed into the view goes through the host: a tools/call the host forwards, with
    # the agent of the model's call; its answer fits memory_search's output schema.
    view.fill("#search input", "second")
    view.click("#search button")
    expect(view.locator("#summary")).to_have_text("1 note")
    log = watched.host("window.vaultHost.log")
    assert log == [{"view": 0, "method": "tools/call",
                    "params": {"name": "memory_search", "arguments": {"agent": "coder", "query": "second"}}}]
    assert view.locator("#results li .title").all_text_contents() == ["Beta"]
    checks = watched.host("window.vaultHost.answers")
    assert [c["name"] for c in checks] == ["memory_search", "memory_search"] and all(c["valid"] for c in checks)

    # The host's theme follows into the view (ui/notifications/host-context-changed, partial).
    watched.host("window.vaultHost.context(0, {theme: 'dark'})")
    expect(view.locator("html")).to_have_class("dark")

    # Teardown: the view answers ui/resource-teardown, so the host's request resolves.
    assert watched.host("window.vaultHost.teardown(0, 'closed by the test')") == {}
    # Nothing asked but tools/call: no display mode change, no link, no message.
    assert [entry["method"] for entry in watched.host("window.vaultHost.log")] == ["tools/call"]
    # No network but through the host: the view's frame made no request and broke no CSP rule.
    assert [url for frame, url in watched.requests if frame == view] == []
    assert not [line for line in watched.console if "Content Security Policy" in line], watched.console
    watched.page.close()


def test_the_view_says_when_the_models_call_was_cancelled_and_still_searches_through_the_host(
        browser: Any, sites: Sites, served: str) -> None:
    watched = connected(browser, sites, served)
    sandbox = sites.sandbox.origin + "/sandbox.html"
    watched.host("window.vaultHost.render('memory_search', arg, {theme: 'dark', displayMode: 'inline'})", sandbox)
    view = watched.view()
    assert view.evaluate("document.documentElement.classList.contains('dark')"), "hostContext's theme applies"
    watched.host("window.vaultHost.cancel(0, {agent: 'planner', query: 'parser'}, 'the user stopped it')")
    expect(view.locator("#summary")).to_have_text(
        "The model's search was cancelled (the user stopped it). Ask a search.")
    assert view.locator("#results li").count() == 0
    view.click("#search button")
    expect(view.locator("#results li").first).to_be_visible()
    log = watched.host("window.vaultHost.log")
    assert log == [{"view": 0, "method": "tools/call",
                    "params": {"name": "memory_search", "arguments": {"agent": "planner", "query": "parser"}}}]
    assert watched.host("window.vaultHost.teardown(0, 'done')") == {}
    watched.page.close()
