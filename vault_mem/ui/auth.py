"""Who a page request is (docs/ui.md, "Logging in").

A person logs in with a one-time link (``/?login=CODE``, printed by ``vault-mem ui`` and by
``serve --http``), or on the login form with the server's ``--token`` (the owner) or an agent's
key (that agent, seeing only what it may read). The page's own script sends either to
``POST /api/login`` and gets two secrets that open the session only together:

- the session cookie (HttpOnly, SameSite=Strict). A browser sends cookies for 127.0.0.1 to every
  port of it, so any local program the browser visits can receive this one: alone it opens nothing;
- the page secret, in the login's answer, which only the page's own script can read (a page of any
  other origin, another port of the same host included, cannot read the answer). The script keeps
  it in ``sessionStorage`` (per origin and per tab) and sends it with every ``/api`` request in
  ``X-Page-Secret``; no answer ever gives it again.

A session is a file in this vault's folder of page state (in the user's configuration folder,
owner-only, beside the agent keys: served/keys.py), named by the cookie's hash and holding the page
secret's hash, who it is, the hash of the key or token that opened it and when it ends; so every
worker of ``serve --workers N`` and every later run knows it, and logging out (deleting the file)
ends it everywhere. Neither secret is kept, only their hashes. A session belongs to the key that
opened it: once that key is no longer its agent's (removed, even if a new key of the same name was
issued since), the session is refused and its file deleted.

Several vaults served together (docs/ui.md, "Several vaults") keep their page state in one folder
of their own, named after the set of their folders (``Where``: a tuple of roots), so that a session
or a code of one set opens nothing on a page of another; an agent's session also records, for each
vault its key reached when it logged in, the agent's name there (``Session.agents``).

A one-time code is a file named by the code's hash in that vault's ``logins`` folder: the exchange
deletes it, which only one request can do, so a code works once, and only for ``ui_login_ttl``
(settings). Wrong logins are counted by ``Guesses`` (below)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vault_mem.served.keys import config_dir, hashed, vault_key
from vault_mem.settings import Settings

UI_DIR = "ui"
COOKIE = "vault_mem_session"
PAGE_HEADER = "x-page-secret"
SECRET_FORM = re.compile(r"[A-Za-z0-9_-]{32,100}")  # what secrets.token_urlsafe makes

# Whose page state: one vault's root, or the roots of several vaults served on one page together.
Where = Path | tuple[Path, ...]


def _folder(root: Where) -> Path:
    """The page state of this vault (or of these vaults together), owner-only (not an index's
    folder: a build wants it empty)."""
    name = vault_key(root) if isinstance(root, Path) else "\n".join(sorted(vault_key(r) for r in root))
    folder = config_dir() / UI_DIR / hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _code_file(root: Where, code: str) -> Path:
    return _folder(root) / "logins" / hashlib.sha256(code.encode("utf-8", "replace")).hexdigest()


def issue_login(root: Where, config: Settings) -> str:
    """A new one-time login code (for the owner); it lives ``config``'s ``ui_login_ttl``."""
    code = secrets.token_urlsafe(24)
    path = _code_file(root, code)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    _forget_stale(path.parent, config.ui_login_ttl)
    return code


def use_login(root: Where, code: str, config: Settings) -> bool:
    """Whether ``code`` is a live one-time code (younger than ``config``'s ``ui_login_ttl``); it is
    dead afterwards either way."""
    if not code or len(code) > 200:
        return False
    path = _code_file(root, code)
    try:
        made = path.stat().st_mtime
        path.unlink()  # only one request can do this
    except OSError:
        return False
    return time.time() - made <= config.ui_login_ttl


def _forget_stale(folder: Path, age: float) -> None:
    """Delete the files of ``folder`` older than ``age`` seconds (dead codes, ended sessions)."""
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        for item in found:
            with contextlib.suppress(OSError):
                if time.time() - item.stat().st_mtime > age:
                    os.unlink(item.path)


@dataclass(frozen=True)
class Session:
    """A logged-in page. ``agent`` None is the vault's owner; ``key``: the SHA-256 of the agent key
    or token that opened it (None: a one-time link); ``expires``: a ``time.time()``; ``ident``: the
    cookie's hash, its file's name; ``agents``: with several vaults, an agent's name in each vault
    its key reached at login (by ``vault_key``), None with one."""

    agent: str | None
    key: str | None
    expires: float
    ident: str
    agents: Mapping[str, str] | None = None


def _sessions(root: Where) -> Path:
    return _folder(root) / "sessions"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def open_session(root: Where, agent: str | None, key: str | None, config: Settings,
                 now: float | None = None, agents: Mapping[str, str] | None = None) -> tuple[Session, str, str]:
    """A new session: (it, the cookie's value, the page secret), living ``config``'s
    ``ui_session_ttl``. Each secret is shown only here."""
    cookie, page = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    session = Session(agent, key, (time.time() if now is None else now) + config.ui_session_ttl,
                      _digest(cookie), dict(agents) if agents is not None else None)
    folder = _sessions(root)
    folder.mkdir(mode=0o700, exist_ok=True)
    _forget_stale(folder, config.ui_session_ttl)
    record: dict[str, object] = {"agent": agent, "key": key, "expires": session.expires, "page": _digest(page)}
    if agents is not None:
        record["agents"] = dict(agents)
    tmp = folder / f".{session.ident}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(tmp, folder / session.ident)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return session, cookie, page


def find_session(root: Where, cookie: str | None, page: str | None, now: float | None = None) -> Session | None:
    """The live session both secrets open, or None (either missing or wrong, logged out, expired)."""
    if not cookie or not page or not SECRET_FORM.fullmatch(cookie) or not SECRET_FORM.fullmatch(page):
        return None
    path = _sessions(root) / _digest(cookie)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        agent, key, expires, page_hash = record["agent"], record["key"], record["expires"], record["page"]
        agents = record.get("agents")
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not (isinstance(expires, int | float) and isinstance(page_hash, str) and isinstance(agent, str | None)
            and isinstance(key, str | None)):
        return None
    if agents is not None and not (isinstance(agents, dict)
                                   and all(isinstance(v, str) for v in agents.values())):
        return None
    if expires < (time.time() if now is None else now):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    if not hmac.compare_digest(_digest(page), page_hash):
        return None
    return Session(agent, key, float(expires), path.name, agents)


def end_session(root: Where, session: Session) -> None:
    """End ``session`` for good, in every process that serves the vault."""
    with contextlib.suppress(FileNotFoundError):
        (_sessions(root) / session.ident).unlink()


def token_hash(token: str) -> str:
    """How a session names the token or key that opened it (the key file's own hash)."""
    return hashed(token)


class Guesses:
    """Wrong logins, per client address and from all addresses together (docs/ui.md, "Logging in").

    After ``ui_login_free`` wrong logins from one address, or ``ui_login_free_all`` from all, the
    next try must wait ``ui_login_first_wait`` seconds after the last wrong one, twice that after
    one more, and so on up to ``ui_login_longest_wait``; wrong logins are forgotten after
    ``ui_login_forget`` seconds without one. A try made while waiting is not counted. Only the
    owner's token can be weak (a person chooses it): a one-time code and an agent key are random
    (192 and 256 bits), so they are checked even while others wait, and the owner, whose
    ``vault-mem ui`` always gives a new link, is never locked out. ``clock``: a monotonic clock
    (tests pass their own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, config: Settings) -> None:
        self.clock = clock
        self.config = config  # the ``ui_login_*`` settings
        self._lock = threading.Lock()
        self._by_address: dict[str, tuple[int, float]] = {}  # address: (wrong logins, when the last was)
        self._everyone: tuple[int, float] = (0, 0.0)

    def wait(self, address: str) -> float:
        """Seconds until a token from ``address`` is checked again (0: now)."""
        now = self.clock()
        config = self.config
        with self._lock:
            mine = self._live(self._by_address.get(address), now)
            everyone = self._live(self._everyone, now)
        return max(_until(mine, config.ui_login_free, now, config),
                   _until(everyone, config.ui_login_free_all, now, config))

    def failed(self, address: str) -> None:
        """Count a wrong login from ``address``."""
        now = self.clock()
        with self._lock:
            count, _ = self._live(self._by_address.get(address), now)
            self._by_address[address] = (count + 1, now)
            count, _ = self._live(self._everyone, now)
            self._everyone = (count + 1, now)
            if len(self._by_address) > self.config.ui_login_addresses:
                self._prune(now)

    def _live(self, record: tuple[int, float] | None, now: float) -> tuple[int, float]:
        if record is None or now - record[1] > self.config.ui_login_forget:
            return 0, now
        return record

    def _prune(self, now: float) -> None:
        """Keep the address table bounded: the forgotten go first, then the longest quiet."""
        for address, record in list(self._by_address.items()):
            if now - record[1] > self.config.ui_login_forget:
                del self._by_address[address]
        while len(self._by_address) > self.config.ui_login_addresses:
            del self._by_address[min(self._by_address, key=lambda a: self._by_address[a][1])]


def _until(record: tuple[int, float], free: int, now: float, config: Settings) -> float:
    count, last = record
    if count < free:
        return 0.0
    step = min(config.ui_login_first_wait * 2.0 ** min(count - free, 64), config.ui_login_longest_wait)
    return max(0.0, last + step - now)


def retry_after(wait: float) -> str:
    """A wait as ``Retry-After`` gives it: whole seconds, rounded up."""
    return str(max(1, math.ceil(wait)))
