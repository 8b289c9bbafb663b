"""The page of several vaults in Chromium (docs/ui.md, "Several vaults"), served by
``vault-mem ui --vault orchard=... --vault quarry=... --vault lighthouse=...``: the owner's switcher
changes what every view shows, names its vault in every request and in the address (a reload and
the Back button keep it), works from the keyboard and reads at 420x800; a key of one vault sees no
switcher and no other vault's name anywhere, even when the address names one; a key in two vaults
sees each with that vault's limits; a vault name is drawn as text, whatever the server sends.
tests/integration/test_ui_vaults.py checks the same answers without a browser."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import connect
from test_ui import wait_listening
from test_ui_browser import CHROMIUM, HOSTILE, shot
from test_ui_vaults import CHANGED, same_key_in, write_vaults

from vault_mem import settings
from vault_mem.search.api import VaultIndex, sync, usable_index_dir
from vault_mem.served.context import Vault
from vault_mem.served.keys import add_agent, remove_agent
from vault_mem.settings import Settings

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")


@dataclass
class UI:
    """``vault-mem ui`` on the three test vaults: its page at ``base``, its one-time ``link``."""

    base: str
    link: str
    roots: dict[str, Path]


def journal_changes_at_home(roots: dict[str, Path]) -> None:
    """One journaled change by ``coder`` in each vault, through a real MCP session, kept where
    ``vault-mem ui`` finds it (each vault's own index folder and history beside it)."""
    async def run() -> None:
        for name, root in roots.items():
            index = VaultIndex(root, usable_index_dir(root, None), config=settings.current())
            try:
                sync(index, procs=1)
                async with asynccontextmanager(connect)(Vault(root, index)) as client:
                    await client.call("memory_edit", agent="coder", ref=CHANGED[name], append=f"Checked in the {name}.")
            finally:
                index.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # off the browser driver's event loop
        pool.submit(anyio.run, run).result(timeout=120)


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[UI]:
    roots = write_vaults(tmp_path)
    journal_changes_at_home(roots)
    from serving import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "vault_mem", "ui", *(a for name, root in roots.items()
                                                                       for a in ("--vault", f"{name}={root}")),
                             "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        link = proc.stdout.readline().decode().strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?login=[\w-]+", link), (link, proc.stderr)
        base = f"http://127.0.0.1:{port}"
        wait_listening(base, proc)
        yield UI(base, link, roots)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert b"Traceback" not in err, err.decode()
    assert "the page of the vaults orchard (" in err.decode()


class Watched:
    """A browser page, with every ``/api`` request it sends and every answer it gets."""

    def __init__(self, browser: Any, width: int = 1280, height: int = 820) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.answers: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url) if "/api/" in r.url else None)
        self.page.on("response", self._answered)

    def _answered(self, response: Any) -> None:
        if "/api/" in response.url:
            with contextlib.suppress(Exception):  # a body the page dropped (a reload): nothing to read
                self.answers.append(response.text())

    def texts(self, selector: str) -> list[str]:
        return [t.strip() for t in self.page.locator(selector).all_text_contents()]

    def results(self) -> list[str]:
        """The titles Search lists, sorted (each row: its kind, its title, then its details)."""
        return sorted(self.page.evaluate("[...document.querySelectorAll('#results li')]"
                                         ".map(li => li.childNodes[1].textContent)"))

    def view(self, name: str, ready: str) -> None:
        self.page.click(f"#tabs button[data-view={name}]")
        self.page.wait_for_selector(ready)

    def everything(self) -> str:
        """What the page holds and every answer it was given, as one text."""
        return self.page.content() + "\n".join(self.answers)


def log_in_with(watched: Watched, base: str, key: str) -> None:
    page = watched.page
    page.goto(base + "/")
    page.wait_for_selector("#login:not([hidden])")
    page.fill("input[name=secret]", key)
    page.click("#login button[type=submit]")
    page.wait_for_selector("#tabs:not([hidden])")


def activity_paths(watched: Watched) -> list[str]:
    watched.page.wait_for_selector("#changes li")
    return watched.texts("#changes li .path")


def test_the_owners_switcher_changes_what_every_view_shows_and_the_address_keeps_it(browser: Any, ui: UI) -> None:
    add_agent(ui.roots["quarry"].resolve(), "digger", ["shared/"], [], False, config=Settings())
    w = Watched(browser)
    page = w.page
    page.goto(ui.link)
    page.wait_for_selector("#tabs:not([hidden])")
    assert page.locator("#vault-pick").is_visible()
    assert w.texts("#vault option") == ["orchard", "quarry", "lighthouse"]
    assert page.url == ui.base + "/?vault=orchard"  # the code left, the vault shown came in
    assert activity_paths(w) == [CHANGED["orchard"]]
    assert (page.text_content("#who") or "").startswith("orchard · owner")

    page.select_option("#vault", "quarry")
    page.wait_for_url(ui.base + "/?vault=quarry")
    page.locator("#changes li .path", has_text=CHANGED["quarry"]).wait_for()
    assert activity_paths(w) == [CHANGED["quarry"]] and "quarry" in (page.text_content("#who") or "")
    page.locator("#changes li").first.click()
    page.wait_for_selector("#change pre.diff")
    assert "+Checked in the quarry." in (page.text_content("#change pre.diff") or "")
    shot(page, "vaults")
    w.view("search", "#results li")
    assert w.results() == ["Blasting schedule", "Granite seams"]
    page.locator("#results li", has_text="Granite seams").click()
    page.wait_for_selector("#note h2")
    assert page.text_content("#note h2") == "Granite seams"
    w.view("agents", "#agents tbody tr td")
    assert [row[0] for row in page.evaluate(
        "[...document.querySelectorAll('#agents tbody tr')].map(r => [...r.cells].map(c => c.textContent))")] == \
        ["coder", "digger"]
    w.view("inbox", "#inboxes .inbox")
    assert "Prune the pears" not in (page.text_content("#inboxes") or "")  # the orchard's handoff stays there

    page.reload()  # the address keeps the vault
    page.wait_for_selector("#tabs:not([hidden])")
    assert page.input_value("#vault") == "quarry"
    assert activity_paths(w) == [CHANGED["quarry"]]
    page.go_back()  # the vault before
    page.locator("#changes li .path", has_text=CHANGED["orchard"]).wait_for()
    assert page.input_value("#vault") == "orchard" and page.url == ui.base + "/?vault=orchard"
    w.view("inbox", ".inbox li")
    assert "Prune the pears" in (page.text_content("#inboxes") or "")
    w.view("search", "#results li")
    assert "Apple varieties" in (page.text_content("#results") or "")

    page.click("h1")  # the keyboard alone, from the top: Tab reaches the switcher first, and the next
    page.keyboard.press("Tab")  # vault is one key away
    assert page.evaluate("document.activeElement.id") == "vault"
    page.keyboard.press("ArrowDown")
    page.wait_for_url(ui.base + "/?vault=quarry")
    page.locator("#results li", has_text="Granite seams").wait_for()
    assert "Apple varieties" not in (page.text_content("#results") or "") and page.text_content("#note") == ""
    page.keyboard.press("ArrowDown")
    page.wait_for_url(ui.base + "/?vault=lighthouse")
    page.locator("#results li", has_text="Keeper's log").wait_for()

    # Every call names its vault, but the login and the first question after it or a reload: which
    # vaults this session reaches (the address named none then).
    sent = [u for u in w.requests if not re.search(r"/api/(login|logout)\b", u) and not u.endswith("/api/session")]
    assert len(sent) > 15 and all(re.search(r"[?&]vault=(orchard|quarry|lighthouse)\b", u) for u in sent), sent
    assert w.requests.count(ui.base + "/api/session") == 1  # the reload's named the vault of the address

    page.set_viewport_size({"width": 420, "height": 800})  # a narrow window: the switcher reads and fits
    box = page.locator("#vault").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 420 and box["height"] >= 16
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
    assert page.locator("#vault-pick").is_visible() and page.locator("#tabs button[data-view=search]").is_visible()
    assert w.dialogs == []


def test_a_key_of_one_vault_sees_no_switcher_and_no_other_vaults_name_even_when_the_address_names_one(
        browser: Any, ui: UI) -> None:
    _, key = add_agent(ui.roots["orchard"].resolve(), "helper", ["shared/"], [], False, config=Settings())
    w = Watched(browser)
    page = w.page
    log_in_with(w, ui.base, key)
    assert page.locator("#vault-pick").is_hidden() and page.url == ui.base + "/"
    assert (page.text_content("#who") or "").startswith("orchard · as agent helper")
    assert activity_paths(w) == [CHANGED["orchard"]]
    w.view("inbox", ".inbox li")
    w.view("search", "#results li")
    w.view("agents", "#agents tbody tr td")
    for hidden in ("quarry", "lighthouse"):  # the address names a vault the key does not reach
        page.goto(f"{ui.base}/?vault={hidden}")
        page.wait_for_selector("#tabs:not([hidden])")
        page.locator("#status", has_text="none of this page's vaults has that name").wait_for()
        assert page.url == ui.base + "/" and activity_paths(w) == [CHANGED["orchard"]]
    page.goto(f"{ui.base}/?vault=nosuch")  # one that does not exist: the same
    page.locator("#status", has_text="none of this page's vaults has that name: give one of orchard").wait_for()
    secret = page.evaluate("sessionStorage.getItem('vault-mem-page-secret')")
    for hidden, model in (("quarry", "nosuch"), ("lighthouse", "nosuch")):
        for path in ("/api/session", "/api/search", "/api/activity", "/api/agents", "/api/inbox"):
            tried = page.request.get(f"{ui.base}{path}?vault={hidden}", headers={"X-Page-Secret": secret})
            same = page.request.get(f"{ui.base}{path}?vault={model}", headers={"X-Page-Secret": secret})
            assert (tried.status, tried.text()) == (same.status, same.text()) and tried.status == 400
            w.answers.append(tried.text())
    everything = w.everything().lower()
    assert "quarry" not in everything and "lighthouse" not in everything
    assert "granite" not in everything and "keeper" not in everything
    assert w.dialogs == []


def test_a_key_in_two_vaults_sees_each_with_its_own_limits_and_the_third_nowhere(browser: Any, ui: UI) -> None:
    _, key = add_agent(ui.roots["orchard"].resolve(), "helper", ["shared/"], [], False, config=Settings())
    same_key_in(ui.roots["quarry"], "scout", key, ["private/"])
    w = Watched(browser)
    page = w.page
    log_in_with(w, ui.base, key)
    assert w.texts("#vault option") == ["orchard", "quarry"]
    assert (page.text_content("#who") or "").startswith("orchard · as agent helper")
    w.view("search", "#results li")
    assert w.results() == ["Apple varieties", "Prune the pears"]
    page.select_option("#vault", "quarry")
    page.locator("#results li", has_text="Blasting schedule").wait_for()
    assert w.results() == ["Blasting schedule"]
    assert (page.text_content("#who") or "").startswith("quarry · as agent scout")
    w.view("activity", "#activity-count")
    page.locator("#activity-count", has_text="0 changes").wait_for()  # the quarry's change is in shared/
    assert "lighthouse" not in w.everything().lower() and "keeper" not in w.everything().lower()

    page.select_option("#vault", "orchard")
    page.wait_for_url(ui.base + "/?vault=orchard")
    remove_agent(ui.roots["quarry"].resolve(), "scout", config=Settings())  # its key goes from the quarry
    page.select_option("#vault", "quarry")  # still listed until the page asks again: refused, and back
    page.locator("#status", has_text="none of this page's vaults has that name").wait_for()
    page.wait_for_selector("#vault-pick", state="hidden")
    assert page.url == ui.base + "/" and activity_paths(w) == [CHANGED["orchard"]]
    page.goto(ui.base + "/?vault=quarry")  # and by the address after a reload
    page.locator("#status", has_text="none of this page's vaults has that name").wait_for()
    assert page.locator("#vault-pick").is_hidden() and page.url == ui.base + "/"
    assert activity_paths(w) == [CHANGED["orchard"]]
    assert w.dialogs == []


def test_a_vault_name_is_drawn_as_text_whatever_the_server_sends(browser: Any, ui: UI) -> None:
    """No name the server accepts can hold markup (served/vaults.py:check_vault_name); the page draws
    the names as text anyway: here a session answer rewritten on its way names a hostile vault."""
    w = Watched(browser)
    page = w.page

    def hostile(route: Any) -> None:
        answer = route.fetch()
        body = answer.json()
        if "vaults" in body:
            body["vaults"] = [*body["vaults"], HOSTILE]
        route.fulfill(response=answer, body=json.dumps(body))

    page.route(re.compile(r".*/api/session.*"), hostile)
    page.goto(ui.link)
    page.wait_for_selector("#tabs:not([hidden])")
    assert w.texts("#vault option")[-1] == HOSTILE
    assert page.locator("img").count() == 0 and page.locator("#vault option").count() == 4
    page.select_option("#vault", HOSTILE)  # asked for, refused by the server, drawn as text
    page.locator("#status", has_text="none of this page's vaults has that name").wait_for()
    assert page.locator("img").count() == 0
    assert w.dialogs == []
