"""Logging in to the page (docs/ui.md, "Logging in"), over real HTTP, each protection tried by
someone who wants around it: a local program with a shell, a limited agent key and the owner's
cookie (which browsers hand to every port of 127.0.0.1); a key removed and issued again under
the same name; a replayed session after logging out; a guesser at the login. The page runs in
this process under uvicorn, so that wrong logins are timed by the test's own clock."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
import uvicorn
from conftest import eventually, open_vault, write_notes
from serving import free_port

from vault_mem import settings
from vault_mem.served.keys import KeyRing, add_agent, remove_agent
from vault_mem.settings import Settings
from vault_mem.ui import auth
from vault_mem.ui.web import Page

NOTES = {
    "alpha.md": "---\nid: alpha\ntitle: Alpha\n---\nThe first body.\n",
    "private/secret.md": "---\nid: secret\ntitle: Hidden plans\n---\nNot for the limited agent.\n",
    "shared/open.md": "---\nid: open\ntitle: Open note\n---\nFor everyone.\n",
}
TOKEN = "the owner's own token"
READS = ["/api/session", "/api/activity", "/api/change?id=0", "/api/inbox", "/api/search", "/api/search?query=plans",
         "/api/note?ref=private/secret", "/api/agents"]
WRITES = ["/api/undo", "/api/undo-window", "/api/logout"]


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Running:
    base: str
    root: Path
    page: Page
    clock: Clock

    def link(self) -> str:
        return self.page.login_link(self.base)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    """The page of a test vault with ``TOKEN`` as the owner's token, served by uvicorn in a thread."""
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    port, clock = free_port(), Clock()
    page = Page(vault, KeyRing(root), TOKEN, [], port, clock=clock)
    server = uvicorn.Server(uvicorn.Config(page, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: server.started or None, timeout=60, what="the page listening")
        yield Running(f"http://127.0.0.1:{port}", root, page, clock)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        vault.index.close()


def log_in(client: httpx2.Client, **what: str) -> str:
    """Log ``client`` in (``code=`` or ``secret=``) as the page's script does: its page secret."""
    answer = client.post("/api/login", json=what)
    assert answer.status_code == 200, answer.text
    secret = answer.json()["page_secret"]
    assert isinstance(secret, str) and len(secret) >= 32
    return secret


def code_of(link: str) -> str:
    return link.rpartition("login=")[2]


def test_a_session_ends_with_the_key_that_opened_it_and_a_new_key_of_that_name_does_not_revive_it(
        running: Running) -> None:
    root = running.root.resolve()
    _, first = add_agent(root, "coder", ["shared/"], [], False, config=Settings())
    with httpx2.Client(base_url=running.base) as agent:
        secret = log_in(agent, secret=first)
        mine = {"X-Page-Secret": secret}
        assert agent.get("/api/session", headers=mine).json()["agent"] == "coder"
        remove_agent(root, "coder", config=Settings())
        assert agent.get("/api/session", headers=mine).status_code == 401
        _, second = add_agent(root, "coder", ["**"], [], False, config=Settings())  # the same name, wider limits
        for path in READS:
            assert agent.get(path, headers=mine).status_code == 401, path
        remove_agent(root, "coder", config=Settings())
        _, third = add_agent(root, "coder", ["shared/"], [], False, config=Settings())
        assert agent.get("/api/agents", headers=mine).status_code == 401  # ended for good, not only refused
    with httpx2.Client(base_url=running.base) as fresh:
        assert fresh.post("/api/login", json={"secret": second}).status_code == 401  # that key went too
        renewed = {"X-Page-Secret": log_in(fresh, secret=third)}
        assert fresh.get("/api/session", headers=renewed).json()["agent"] == "coder"


def test_the_owners_cookie_alone_opens_nothing_for_a_local_program_with_a_shell_and_a_key(running: Running) -> None:
    root = running.root.resolve()
    _, limited = add_agent(root, "lim", ["shared/"], [], False, config=Settings())
    with httpx2.Client(base_url=running.base) as owner:
        assert owner.get("/", params={"login": code_of(running.link())}).status_code == 200
        assert not owner.cookies  # opening the link's page starts nothing: the page's script logs in
        secret = log_in(owner, code=code_of(running.link()))
        cookie = owner.cookies[auth.COOKIE]
        mine = {"X-Page-Secret": secret}
        assert owner.get("/api/session", headers=mine).json()["agent"] is None
        for path in READS:  # nothing a session reads ever gives its page secret again
            assert secret not in owner.get(path, headers=mine).text, path
    stolen = {"Cookie": f"{auth.COOKIE}={cookie}"}
    with httpx2.Client(base_url=running.base) as thief:
        attacker = log_in(thief, secret=limited)  # a session of its own, with its own page secret
        tries = [{}, {"X-Page-Secret": ""}, {"X-Page-Secret": attacker}, {"X-Page-Secret": "0" * 43},
                 {"X-Page-Secret": cookie}, {"X-CSRF-Token": "0" * 64}]
        for extra in tries:
            for path in READS:
                answer = httpx2.get(running.base + path, headers={**stolen, **extra})
                assert answer.status_code == 401 and secret not in answer.text, (path, extra)
            for path in WRITES:
                answer = httpx2.post(running.base + path, json={"id": "x", "agent": "coder", "since": "1d"},
                                     headers={**stolen, **extra})
                assert answer.status_code == 401, (path, extra)
        for body in ({}, {"code": ""}, {"secret": ""}, {"code": cookie}, {"secret": cookie}):
            answer = httpx2.post(running.base + "/api/login", json=body, headers=stolen)
            assert answer.status_code in (400, 401) and secret not in answer.text, body
        for path in ("/", "/?login=x", "/static/app.js"):
            assert secret not in httpx2.get(running.base + path, headers=stolen).text
    with httpx2.Client(base_url=running.base) as owner_again:  # the owner's own page still works
        both = {**stolen, "X-Page-Secret": secret}
        assert owner_again.get("/api/session", headers=both).status_code == 200
        for origin in ("http://127.0.0.1:9999", "http://127.0.0.1", "http://localhost", "http://evil.example"):
            assert owner_again.get("/api/session", headers={**both, "Origin": origin}).status_code == 403, origin
            assert owner_again.post("/api/undo", json={"id": "x"},
                                    headers={**both, "Origin": origin}).status_code == 403, origin
        for site in ("same-site", "cross-site"):
            assert owner_again.get("/api/session", headers={**both, "Sec-Fetch-Site": site}).status_code == 403
        port = running.base.rpartition(":")[2]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
            assert owner_again.get("/api/session", headers={**both, "Host": host}).status_code == 421, host
        same = owner_again.post("/api/undo", json={"id": "x"},
                                headers={**both, "Origin": running.base, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 404 and "no change" in same.json()["message"]


def test_logging_out_ends_the_session_on_the_server(running: Running) -> None:
    with httpx2.Client(base_url=running.base) as owner:
        secret = log_in(owner, secret=TOKEN)
        both = {"Cookie": f"{auth.COOKIE}={owner.cookies[auth.COOKIE]}", "X-Page-Secret": secret}
        with httpx2.Client(base_url=running.base) as tab:
            assert log_in(tab, secret=TOKEN) != secret  # another tab's session, left alone below
        out = owner.post("/api/logout", json={}, headers={"X-Page-Secret": secret})
        assert out.status_code == 200 and "Max-Age=0" in out.headers["set-cookie"]
    for path in READS:  # the same cookie and page secret, replayed after the logout
        assert httpx2.get(running.base + path, headers=both).status_code == 401, path
    assert httpx2.post(running.base + "/api/logout", json={}, headers=both).status_code == 401
    sessions = auth._sessions(running.root)
    assert len([p for p in sessions.iterdir() if not p.name.startswith(".")]) == 1  # the other tab's only


def test_a_session_opened_with_the_token_ends_when_the_server_holds_another(running: Running) -> None:
    with httpx2.Client(base_url=running.base) as owner:
        secret = log_in(owner, secret=TOKEN)
        assert owner.get("/api/session", headers={"X-Page-Secret": secret}).status_code == 200
        running.page.token = "a new token"  # as a later run given another token
        assert owner.get("/api/session", headers={"X-Page-Secret": secret}).status_code == 401
        running.page.token = TOKEN
        assert owner.get("/api/session", headers={"X-Page-Secret": secret}).status_code == 401  # for good
        linked = log_in(owner, code=code_of(running.link()))  # a link's session belongs to no token
        assert owner.get("/api/session", headers={"X-Page-Secret": linked}).status_code == 200


def test_wrong_logins_make_the_next_wait_while_a_link_and_an_agents_key_still_log_in(
        running: Running) -> None:
    config = settings.current()
    _, key = add_agent(running.root.resolve(), "helper", ["shared/"], [], False, config=Settings())
    with httpx2.Client(base_url=running.base) as guesser:
        answers = [guesser.post("/api/login", json={"secret": f"guess {n}"}) for n in range(200)]
        checked = [a for a in answers if a.status_code == 401]
        waited = [a for a in answers if a.status_code == 429]
        assert len(checked) == config.ui_login_free and len(waited) == 200 - config.ui_login_free
        assert all(a.headers["retry-after"] == "1" for a in waited)
        assert "too many wrong logins" in waited[0].json()["message"] and waited[0].json()["retry_after"] == 1
        right = guesser.post("/api/login", json={"secret": TOKEN})
        assert right.status_code == 429  # not checked while waiting, so a guess learns nothing
        assert guesser.post("/api/login", json={"code": "made-up"}).status_code == 429
        log_in(guesser, secret=key)  # random keys and one-time codes are never guessed: they still work
        log_in(guesser, code=code_of(running.link()))
        running.clock.now += 1.0
        assert guesser.post("/api/login", json={"secret": "guess again"}).status_code == 401
        assert guesser.post("/api/login", json={"secret": TOKEN}).headers["retry-after"] == "2"
        waits = []
        for _ in range(20):  # each wrong login doubles the wait, up to the longest
            running.clock.now += float(waits[-1] if waits else 2)
            assert guesser.post("/api/login", json={"secret": "and again"}).status_code == 401
            waits.append(int(guesser.post("/api/login", json={"secret": TOKEN}).headers["retry-after"]))
        assert waits[:4] == [4, 8, 16, 32] and max(waits) == config.ui_login_longest_wait
        running.clock.now += config.ui_login_longest_wait  # tries while waiting did not lengthen it
        log_in(guesser, secret=TOKEN)
        running.clock.now += config.ui_login_forget + 1  # forgotten: a typo costs nothing again
        assert guesser.post("/api/login", json={"secret": "typo"}).status_code == 401
        log_in(guesser, secret=TOKEN)


def test_wrong_logins_from_many_addresses_make_every_address_wait() -> None:
    config = Settings()
    clock = Clock()
    guesses = auth.Guesses(clock, config=config)
    for n in range(config.ui_login_free_all):
        assert guesses.wait(f"10.0.0.{n}") == 0
        guesses.failed(f"10.0.0.{n}")  # one each: no address is over its own allowance
    assert guesses.wait("10.0.1.1") == config.ui_login_first_wait  # a new address waits too
    clock.now += config.ui_login_first_wait
    assert guesses.wait("10.0.1.1") == 0


def test_the_table_of_guessing_addresses_stays_bounded() -> None:
    clock = Clock()
    guesses = auth.Guesses(clock, config=dataclasses.replace(Settings(), ui_login_addresses=10))
    for n in range(50):
        clock.now += 1
        guesses.failed(f"10.0.{n}.1")
    assert len(guesses._by_address) == 10
    assert "10.0.49.1" in guesses._by_address and "10.0.0.1" not in guesses._by_address  # the quietest go
