"""Who a page request is (docs/ui.md, "Logging in").

A person logs in with a one-time link (``/?login=CODE``, printed by ``vault-mem ui`` and by
``serve --http``), or on the login form with the server's ``--token`` (the owner) or an agent's
key (that agent, seeing only what it may read). Either gives a session cookie (HttpOnly,
SameSite=Strict) signed with a secret kept in the user's configuration folder, one per vault
(beside the agent keys: served/keys.py), so every worker of ``serve --workers N`` and every
later run knows it; the key itself is never kept or sent back.

A one-time code is a file named by the code's hash in that vault's ``logins`` folder: the exchange
deletes it, which only one request can do, so a code works once, and only for ``ui_login_ttl`` (settings).
Every state-changing request also needs the session's CSRF token, which only the page's own
script gets (from ``/api/session``, a same-origin read)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from vault_mem import settings
from vault_mem.served.agents import Agent
from vault_mem.served.keys import KeyRing, config_dir, vault_key

UI_DIR = "ui"
COOKIE = "vault_mem_session"


def _folder(root: Path) -> Path:
    """This vault's folder of page state, owner-only (not the index's folder: a build wants it empty)."""
    folder = config_dir() / UI_DIR / hashlib.sha256(vault_key(root).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def secret_of(root: Path) -> bytes:
    """The signing secret of this vault's sessions, made once (owner-only) and then read."""
    path = _folder(root) / "secret"
    with contextlib.suppress(FileNotFoundError):
        data = path.read_bytes()
        if len(data) >= 32:
            return data
    fresh = secrets.token_bytes(32)
    tmp = path.with_name(f".secret.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(fresh)
    try:
        os.link(tmp, path)  # the first process to get there wins; the others read its secret
    except FileExistsError:
        pass
    except OSError:  # no hard links (some Windows shares): last writer wins, sessions made before it end
        os.replace(tmp, path)
        return fresh
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path.read_bytes()


def _code_file(root: Path, code: str) -> Path:
    return _folder(root) / "logins" / hashlib.sha256(code.encode("utf-8", "replace")).hexdigest()


def issue_login(root: Path) -> str:
    """A new one-time login code (for the owner)."""
    code = secrets.token_urlsafe(24)
    path = _code_file(root, code)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    _forget_stale(path.parent)
    return code


def use_login(root: Path, code: str) -> bool:
    """Whether ``code`` is a live one-time code; it is dead afterwards either way."""
    if not code or len(code) > 200:
        return False
    path = _code_file(root, code)
    try:
        made = path.stat().st_mtime
        path.unlink()  # only one request can do this
    except OSError:
        return False
    return time.time() - made <= settings.current().ui_login_ttl


def _forget_stale(folder: Path) -> None:
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        for item in found:
            with contextlib.suppress(OSError):
                if time.time() - item.stat().st_mtime > settings.current().ui_login_ttl:
                    os.unlink(item.path)


@dataclass(frozen=True)
class Session:
    """A logged-in page: ``agent`` None is the vault's owner."""

    agent: str | None
    expires: float
    nonce: str

    def csrf(self, secret: bytes) -> str:
        return _sign(secret, f"csrf|{self.agent or ''}|{self.expires}|{self.nonce}")


def _sign(secret: bytes, text: str) -> str:
    return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()


def new_session(secret: bytes, agent: str | None, now: float | None = None) -> tuple[Session, str]:
    """A session and its cookie value (payload and signature)."""
    session = Session(agent, (now or time.time()) + settings.current().ui_session_ttl, secrets.token_urlsafe(12))
    payload = base64.urlsafe_b64encode(json.dumps([session.agent, session.expires, session.nonce]).encode()).decode()
    return session, f"{payload}.{_sign(secret, payload)}"


def read_session(secret: bytes, cookie: str | None, now: float | None = None) -> Session | None:
    """The session a cookie value carries, or None (missing, forged, expired)."""
    if not cookie or cookie.count(".") != 1 or len(cookie) > 1000:
        return None
    payload, signature = cookie.split(".")
    if not hmac.compare_digest(signature, _sign(secret, payload)):
        return None
    try:
        agent, expires, nonce = json.loads(base64.urlsafe_b64decode(payload.encode()))
    except (ValueError, TypeError):
        return None
    if not isinstance(expires, (int, float)) or expires < (now or time.time()):
        return None
    return Session(agent if isinstance(agent, str) else None, float(expires), str(nonce))


def login_with(secret_given: str, token: str | None, keys: KeyRing) -> tuple[bool, Agent | None]:
    """(True, None) for the owner's token, (True, agent) for an agent's key, else (False, None)."""
    given = secret_given.strip()
    if not given:
        return False, None
    if token and hmac.compare_digest(given.encode(), token.encode()):
        return True, None
    agent = keys.agent_for(given) if keys.any() else None
    return (agent is not None), agent
