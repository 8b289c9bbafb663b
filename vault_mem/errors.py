"""The one exception tree of vault-mem.

    VaultMemError                 base; never raised itself
    ├── InvalidInput              bad input: a tool parameter, a CLI argument, a ref   -> status "invalid"
    │   └── PathRefused           a domain or ref that would leave the vault
    ├── NotFound                  a ref that names nothing                              -> status "not_found"
    ├── Conflict                  a write precondition failed (stale etag / updated)  -> status "conflict"
    ├── VaultUnavailable          the vault folder is missing, a file, or unreadable
    ├── WriteFailed               the file system refused a write (disk full, read-only)
    └── GitError                  a git command failed or could not run (vault/git.py)  -> status "error"

The transports (server, CLI) turn these into answers; nothing else catches broadly.
"""

from __future__ import annotations

from typing import Any


class VaultMemError(Exception):
    """Base of every error vault-mem raises on purpose."""

    status = "invalid"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(VaultMemError):
    """A parameter, argument or ref that does not fit what is accepted.

    ``param`` names the parameter; the message says what is accepted.
    """

    status = "invalid"

    def __init__(self, param: str, message: str, **details: Any) -> None:
        text = message if message.startswith(param) else f"{param}: {message}"
        super().__init__(text, **details)
        self.param = param


class PathRefused(InvalidInput):
    """A domain or ref that would resolve outside the vault or into a hidden folder."""


class NotFound(VaultMemError):
    status = "not_found"


class Conflict(VaultMemError):
    status = "conflict"


class VaultUnavailable(VaultMemError):
    status = "invalid"


class WriteFailed(VaultMemError):
    status = "invalid"


class GitError(VaultMemError):
    """A git command failed; the message is git's own explanation (or why it could not run)."""

    status = "error"
