"""The one exception tree of vault-mem (docs/tools.md, "Statuses").

    VaultMemError                 base; never raised itself
    ├── CallerError               the call cannot be answered as asked; the caller can change it
    │   ├── InvalidInput          bad input: a tool parameter, a CLI argument, a ref      -> "invalid"
    │   │   └── PathRefused       a domain or ref that would leave the vault             -> "invalid"
    │   ├── NotFound              a ref that names nothing                                -> "not_found"
    │   ├── Conflict              a write precondition failed (stale etag / updated)     -> "conflict"
    │   └── Forbidden             this caller may not do that (docs/sharing.md)          -> "forbidden"
    └── Fault                     the server or the machine failed, not the caller        -> "error"
        ├── VaultUnavailable      the vault folder (or its index) is missing or cannot be read
        ├── WriteFailed           the file system refused what a write needed (disk full, read-only)
        ├── IndexBusy             the index lock was not obtained in time (another process holds it)
        ├── InternalError         a bug in vault-mem: a query failed or broke the answer bound
        ├── GitError              a git command failed or could not run (git/repo.py)
        └── MeaningUnavailable    the meaning stage cannot run: its packages or its model folder (meaning/)

Caller errors say what was wrong with the call; faults say what failed and whether a retry
can help (``retry``, and the end of ``message``): an agent must never be told its input was
wrong when the disk was full. The transports (server, CLI) turn these into answers;
nothing else catches broadly.
"""

from __future__ import annotations

import errno
from typing import Any, ClassVar


class VaultMemError(Exception):
    """Base of every error vault-mem raises on purpose."""

    status: ClassVar[str] = "invalid"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details

    @property
    def message(self) -> str:
        """The one-line text the caller sees."""
        return str(self.args[0])


class CallerError(VaultMemError):
    """The call cannot be answered as asked: its input, its ref or its precondition."""


class InvalidInput(CallerError):
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


class NotFound(CallerError):
    status = "not_found"


class Conflict(CallerError):
    status = "conflict"


class Forbidden(CallerError):
    """The caller may not do this: a read-only server or agent, a write outside an agent's
    globs, another agent's name. ``rule`` names the rule; the message says it in words."""

    status = "forbidden"


class Fault(VaultMemError):
    """The server or the machine failed to do what was asked; the caller did nothing wrong.

    ``retry`` says whether the same call, made again, can succeed without anyone fixing
    anything; the message ends with that advice. A raise site may pass its own ``retry``
    or ``advice`` when it knows better than the class.
    """

    status = "error"
    retries: ClassVar[bool] = False  # the class's rule, unless a raise site says otherwise
    advice_retry: ClassVar[str] = "a retry may succeed"
    advice_no_retry: ClassVar[str] = "retrying will not help until this is fixed"

    def __init__(self, message: str, *, retry: bool | None = None, advice: str | None = None,
                 **details: Any) -> None:
        super().__init__(message, **details)
        self._retry = retry
        self._advice = advice

    def rule(self) -> tuple[bool, str]:
        """(retry helps, advice) by the class's rule."""
        return self.retries, self.advice_retry if self.retries else self.advice_no_retry

    @property
    def retry(self) -> bool:
        return self.rule()[0] if self._retry is None else self._retry

    @property
    def advice(self) -> str:
        if self._advice is not None:
            return self._advice
        if self._retry is None:
            return self.rule()[1]
        return self.advice_retry if self._retry else self.advice_no_retry

    @property
    def message(self) -> str:
        return f"{self.args[0]}; {self.advice}"


class VaultUnavailable(Fault):
    """The vault folder is missing, is a file or cannot be read, or its index cannot be opened."""

    retries = True
    advice_retry = "a retry succeeds once it is back and readable"


# What an OS error on a write means for a retry: (retry helps as is, advice).
_WRITE_ADVICE: dict[int, tuple[bool, str]] = {
    errno.ENOSPC: (False, "free some disk space, then retry"),
    errno.EDQUOT: (False, "free some space within the quota, then retry"),
    errno.EROFS: (False, "retrying will not help while the vault is read-only"),
    errno.EACCES: (False, "retrying will not help until the file's permissions allow it"),
    errno.EPERM: (False, "retrying will not help until the file's permissions allow it"),
    errno.ENAMETOOLONG: (False, "retrying will not help; use a shorter title or domain"),
}


class WriteFailed(Fault):
    """The file system refused a read or write that a write tool needed; the file is unchanged.

    The advice follows the OS error this was raised from (``raise WriteFailed(...) from exc``):
    a full disk needs space freed, a read-only vault needs to become writable, anything
    else (an I/O error, a busy file) may pass on a retry.
    """

    def rule(self) -> tuple[bool, str]:
        cause = self.__cause__
        if isinstance(cause, OSError):
            if cause.errno in _WRITE_ADVICE:
                return _WRITE_ADVICE[cause.errno]
            return True, self.advice_retry
        return False, "retrying will not help until this is fixed in the vault"


class IndexBusy(Fault):
    """Another process held the index's write lock for longer than the wait allows."""

    retries = True
    advice_retry = "another process (a build or a merge) holds the index; retry in a minute"


class InternalError(Fault):
    """A bug in vault-mem: a query module raised or built an answer over the size bound."""

    advice_no_retry = "this is a bug in vault-mem (logged on the server's stderr); the same call will fail again"


class GitError(Fault):
    """A git command failed or could not run (git/repo.py); ``str()`` of it is git's own reason,
    which sync lines and write warnings quote without the advice."""

    advice_no_retry = "docs/git.md says how a vault works with git"


class MeaningUnavailable(Fault):
    """The meaning stage cannot run: the ``meaning`` extra is not installed, or the model folder
    is missing a file or holds something else than a sentence model (meaning/model.py)."""

    advice_no_retry = "search by words still works; fix the model folder or install the extra to rank by meaning"
