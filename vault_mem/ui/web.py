"""The page's HTTP side: a small ASGI app (no framework) serving the static page and its JSON
endpoints (``api.py``), and ``with_page``, which puts it at ``/`` beside the MCP endpoint.

Every response forbids remote and inline code (``CSP``), framing and sniffing. A request must
name an allowed host (as the MCP endpoint checks: DNS rebinding); a POST, and any ``/api``
request, must not come from another origin (``Origin``, ``Sec-Fetch-Site``; another port of the
same host is another origin); every endpoint but the login needs a session's cookie and its page
secret in ``X-Page-Secret`` together (``auth.py``: the cookie alone opens nothing, so a custom
header also stands for a CSRF token); wrong logins make the next ones wait (``auth.Guesses``).
With several vaults served, every ``/api`` call names its vault in the ``vault`` query parameter
(docs/ui.md, "Several vaults"), and a session reaches the vaults its credential reaches."""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from http.cookies import SimpleCookie
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import anyio

from vault_mem.errors import Forbidden, InvalidInput, NotFound, VaultMemError
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault
from vault_mem.served.keys import KeyRing, vault_key
from vault_mem.served.vaults import Reach, Served, name_after_folder
from vault_mem.ui import api, auth

log = logging.getLogger("vault_mem.ui")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
STATIC = {"/static/app.css": ("app.css", "text/css; charset=utf-8"),
          "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/static/markdown.js": ("markdown.js", "text/javascript; charset=utf-8")}
MCP_PATH = "/mcp"


def static_text(name: str) -> bytes:
    return resources.files("vault_mem.ui").joinpath("static", name).read_bytes()


class Page:
    """The page of the served vaults (docs/ui.md). ``served``: the vaults, by name, and the default
    (a lone ``Vault``: the page of that one, as before several vaults could be served); ``keys``:
    each vault's agent keys, by the vault's name (a lone ``KeyRing``: that one vault's); ``token``:
    the owner's secret for the login form (None: only a one-time link logs in as the owner);
    ``clock``: the monotonic clock wrong logins are timed by (``auth.Guesses``).

    A session reaches, vault by vault, what its credential reaches (``_reach``); every ``/api`` call
    but the login and logout is answered from the vault its ``vault`` query parameter names, else
    from the default (the first the session reaches when it does not reach the default). A vault
    the session does not reach is refused with the words a vault that does not exist gets."""

    def __init__(self, served: Served | Vault, keys: Mapping[str, KeyRing] | KeyRing, token: str | None,
                 hosts: list[str], port: int, clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(served, Vault):
            name = getattr(served, "name", "") or name_after_folder(served.root)
            served = Served({name: served}, name)
        self.served = served
        self.keys = {served.default: keys} if isinstance(keys, KeyRing) else dict(keys)
        primary = served.primary
        self.config = primary.index.config  # logins, sessions and bodies: the default vault's settings
        # One vault keeps its page state where 0.7.0 kept it; several, in a folder of their own.
        self.state: auth.Where = (primary.root if not served.several
                                  else tuple(v.root for v in served.vaults.values()))
        self.where = {name: vault_key(v.root) for name, v in served.vaults.items()}
        self.token = token
        self.guesses = auth.Guesses(clock, config=self.config)
        loopback = ["127.0.0.1", "localhost", "[::1]"]
        names = [*loopback, *hosts]
        self.hosts = {h.lower() for name in names for h in (name, f"{name}:{port}")}
        # An Origin names its port unless it is the scheme's own: a page of another local program
        # (another port of 127.0.0.1) is another origin.
        self.origins = {h.lower() for name in loopback for h in ((name, f"{name}:{port}") if port == 80
                                                                  else (f"{name}:{port}",))}
        self.origins |= {h.lower() for name in hosts for h in (name, f"{name}:{port}")}
        self.files = {path: static_text(name) for path, (name, _) in STATIC.items()}
        self.index_html = static_text("index.html")

    def login_link(self, base: str) -> str:
        """A one-time link that logs its first user in as the owner (of every served vault)."""
        return f"{base}/?login={auth.issue_login(self.state, self.config)}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        method, path = scope["method"], scope["path"]
        if headers.get("host", "").lower() not in self.hosts:
            await _send(send, 421, b"unknown host", "text/plain; charset=utf-8")
            return
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        try:
            if (method == "POST" or path.startswith("/api/")) and not self._same_origin(headers):
                raise Forbidden("a request from another site is refused", rule="origin")
            if path == "/" and method == "GET":  # a ?login=CODE is the page's script's to send
                await _send(send, 200, self.index_html, "text/html; charset=utf-8")
            elif path in self.files and method == "GET":
                await _send(send, 200, self.files[path], STATIC[path][1], cache="no-cache")
            elif path == "/api/login" and method == "POST":
                client = scope.get("client")
                await self._login(str(client[0]) if client else "", receive, send)
            elif path.startswith("/api/"):
                found = await anyio.to_thread.run_sync(self._session, headers)
                if found is None:
                    await _json(send, 401, {"status": "forbidden", "message": "log in first"})
                    return
                await self._api(method, path[5:], query, found[0], found[1], receive, send)
            else:
                await _json(send, 404, {"status": "not_found", "message": f"no page {path[:100]!r}"})
        except VaultMemError as exc:
            code = 403 if isinstance(exc, Forbidden) else 404 if isinstance(exc, NotFound) else 400
            await _json(send, code, {"status": exc.status, "message": exc.message})
        except Exception:  # the page must answer, whatever went wrong below
            log.exception("page request %s %s failed", method, path)
            await _json(send, 500, {"status": "error", "message": "internal error; see the server's log"})

    def _same_origin(self, headers: dict[str, str]) -> bool:
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return False
        origin = headers.get("origin")
        if origin is None:
            return True
        scheme, _, host = origin.partition("://")
        return scheme in ("http", "https") and host.lower() in self.origins

    def _session(self, headers: dict[str, str]) -> tuple[auth.Session, Reach] | None:
        """The session a request opens (its cookie and its page secret together) and what it
        reaches (``_reach``), or None."""
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no session
            cookies = SimpleCookie()
        morsel = cookies.get(auth.COOKIE)
        session = auth.find_session(self.state, morsel.value if morsel is not None else None,
                                    headers.get(auth.PAGE_HEADER))
        if session is None:
            return None
        reach = self._reach(session)
        if not reach:  # its key was removed from every vault, or its token replaced: it ends for good
            auth.end_session(self.state, session)
            return None
        return session, reach

    def _reach(self, session: auth.Session) -> dict[str, Agent | None]:
        """What ``session`` reaches, vault by vault, in the order served: the owner's (a one-time
        link, or the token while it is still the server's) every vault; an agent's, each vault its
        key reached at login and still does (a session outlives neither the key nor the token that
        opened it). A vault whose key ring cannot be read is not reached (fail closed)."""
        if session.agent is None:
            if session.key is not None and not (self.token and hmac.compare_digest(auth.token_hash(self.token),
                                                                                   session.key)):
                return {}  # opened with a token the owner has since replaced
            return dict.fromkeys(self.served.vaults)
        reach: dict[str, Agent | None] = {}
        for name in self.served.vaults:
            ring = self.keys.get(name)
            agent = session.agent if session.agents is None else session.agents.get(self.where[name])
            if ring is None or agent is None:
                continue
            try:
                caller = ring.still(agent, session.key)
            except Exception:  # a key file that cannot be read opens nothing
                log.warning("the agent keys of a served vault cannot be read: its page refuses agents' sessions")
                caller = None
            if caller is not None:
                reach[name] = caller
        return reach

    def _agents_for(self, given: str) -> dict[str, Agent]:
        """The agent ``given`` is the key of, in each served vault whose key ring holds it."""
        found: dict[str, Agent] = {}
        for name in self.served.vaults:
            ring = self.keys.get(name)
            try:
                agent = ring.agent_for(given) if ring is not None and ring.any() else None
            except Exception:  # a key file that cannot be read opens nothing
                agent = None
            if agent is not None:
                found[name] = agent
        return found

    async def _login(self, address: str, receive: Receive, send: Send) -> None:
        """``{"code": CODE}`` (a one-time link) or ``{"secret": TOKEN_OR_KEY}``: the session's cookie,
        and its page secret in the answer, for the page's script alone."""
        data = _object(await _body(receive, self.config.ui_max_body),
                       "the login takes JSON: {\"code\": ...} or {\"secret\": ...}, sent by the page's own script")
        code, given = data.get("code"), data.get("secret")
        wait = self.guesses.wait(address)
        agents: dict[str, Agent] = {}
        key: str | None = None
        if isinstance(code, str) and code:
            ok = await anyio.to_thread.run_sync(auth.use_login, self.state, code, self.config)
            wrong = "that login link was used already or is too old: run vault-mem ui for a new one"
        elif isinstance(given, str) and given.strip():
            given = given.strip()
            agents = await anyio.to_thread.run_sync(self._agents_for, given)
            ok = bool(agents)
            if not ok and wait == 0 and self.token:  # the one secret a person chooses: checked only when not waiting
                ok = hmac.compare_digest(given.encode(), self.token.encode())
            key = auth.token_hash(given) if ok else None
            wrong = ("that token or key is not one of this vault's" if not self.served.several
                     else "that token or key is not one of these vaults'")
        else:
            raise InvalidInput("secret", "give the server's token or an agent's key (or open a one-time login link)")
        if not ok:
            if wait > 0:
                seconds = auth.retry_after(wait)
                await _json(send, 429, {"status": "forbidden", "message":
                                        f"too many wrong logins: the token is not checked for {seconds} s more; "
                                        "an agent's key, or a new link from vault-mem ui, logs in now",
                                        "retry_after": int(seconds)},
                            [(b"retry-after", seconds.encode())])
                return
            self.guesses.failed(address)
            await _json(send, 401, {"status": "forbidden", "message": wrong})
            return
        first = self.served.chosen(None, agents) if agents else None
        name = agents[first].name if first is not None else None
        names = {self.where[v]: agent.name for v, agent in agents.items()} if agents and self.served.several else None
        _, cookie, page = await anyio.to_thread.run_sync(
            lambda: auth.open_session(self.state, name, key, self.config, agents=names))
        lasts = int(self.config.ui_session_ttl)
        set_cookie = f"{auth.COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age={lasts}"
        await _json(send, 200, {"status": "ok", "agent": name, "page_secret": page},
                    [(b"set-cookie", set_cookie.encode())])

    def _pick(self, given: str | None, reach: Mapping[str, Agent | None]) -> str:
        """The vault a call names (``vault``), or the default: a vault this session does not reach
        is refused in the words one that does not exist gets, naming only those it reaches."""
        if given is None:  # the default, else the first it reaches
            return self.served.chosen(None, reach)
        if given in reach:
            return given
        names = ", ".join(self.served.reachable(reach))
        raise InvalidInput("vault", f"none of this page's vaults has that name: give one of {names}")

    async def _api(self, method: str, name: str, query: dict[str, str], session: auth.Session,
                   reach: Reach, receive: Receive, send: Send) -> None:
        data: dict[str, Any] = {}
        if method == "POST":
            data = _object(await _body(receive, self.config.ui_max_body), "the request body must be a JSON object")
            if name == "logout":
                await anyio.to_thread.run_sync(auth.end_session, self.state, session)
                await _json(send, 200, {"status": "ok"},
                            [(b"set-cookie", f"{auth.COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0".encode())])
                return
        elif method != "GET":
            raise InvalidInput("method", f"{method} is not accepted here: GET or POST")
        chosen = self._pick(query.get("vault"), reach)
        vault, caller = self.served.vaults[chosen], reach[chosen]
        if method == "POST":
            if name == "undo":
                answer = await anyio.to_thread.run_sync(api.undo_change, vault, caller, str(data.get("id", "")))
            elif name == "undo-window":
                answer = await anyio.to_thread.run_sync(api.undo_window, vault, caller, str(data.get("agent", "")),
                                                        str(data.get("since", "")), data.get("apply") is True)
            else:
                raise NotFound(f"no endpoint {name[:60]!r}")
            await _json(send, 200, answer)
            return
        if name == "session":  # never a secret: the page secret is only in the login's answer
            answer = {"status": "ok", "agent": caller.name if caller else None,
                      "vault": chosen if self.served.several else vault.root.name, "git_commit": vault.git_commit}
            if len(reach) > 1:  # the vault switcher's choices; with one, the page looks as it always did
                answer.update(vaults=self.served.reachable(reach), default=self.served.chosen(None, reach))
        else:
            answer = await anyio.to_thread.run_sync(self._get, vault, name, query, caller)
        await _json(send, 200, answer)

    @staticmethod
    def _get(vault: Vault, name: str, query: dict[str, str], caller: Agent | None) -> dict[str, Any]:
        if name == "activity":
            return api.activity(vault, caller, query.get("agent", ""), query.get("folder", ""),
                                query.get("since", ""), _int(query.get("offset", "0"), "offset"))
        if name == "change":
            return api.change(vault, caller, query.get("id", ""))
        if name == "inbox":
            return api.inboxes(vault, caller)
        if name == "search":
            raw: dict[str, Any] = {k: v for k, v in query.items() if k in ("query", "tag", "kind", "path", "since")}
            if "limit" in query:
                raw["limit"] = _int(query["limit"], "limit")
            return api.search(vault, caller, raw)
        if name == "note":
            return api.note(vault, caller, query.get("ref", ""), _int(query.get("offset", "0"), "offset"))
        if name == "agents":
            return api.agents(vault, caller)
        raise NotFound(f"no endpoint {name[:60]!r}")


def _object(body: bytes, what: str) -> dict[str, Any]:
    """A request body that must be a JSON object (empty: ``{}``), or InvalidInput saying ``what``."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise InvalidInput("body", what) from None
    if not isinstance(data, dict):
        raise InvalidInput("body", what)
    return data


def _int(text: str, param: str) -> int:
    if not text.isdigit() or len(text) > 9:
        raise InvalidInput(param, f"{text[:40]!r} is not a whole number of 0 or more")
    return int(text)


async def _body(receive: Receive, limit: int) -> bytes:
    """The request's body, at most ``limit`` bytes (the ``ui_max_body`` setting)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise InvalidInput("body", f"the request body passes {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _headers(content_type: str, cache: str = "no-store") -> list[tuple[bytes, bytes]]:
    return [(b"content-type", content_type.encode()), (b"content-security-policy", CSP.encode()),
            (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"same-origin"), (b"cache-control", cache.encode()),
            (b"cross-origin-opener-policy", b"same-origin")]


async def _send(send: Send, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None,
                cache: str = "no-store") -> None:
    headers = [*_headers(content_type, cache), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, value: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(value, ensure_ascii=False, default=str).encode()
    await _send(send, status, body, "application/json; charset=utf-8", extra)


def with_page(mcp: ASGIApp, page: Page) -> ASGIApp:
    """``mcp`` at ``/mcp`` (and for lifespan events), the page everywhere else."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            await mcp(scope, receive, send)
        else:
            await page(scope, receive, send)

    return app
