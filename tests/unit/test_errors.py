"""The exception tree (vault_mem/errors.py): caller mistakes and machine faults on separate
branches, each fault saying whether a retry can help (docs/tools.md, "Statuses")."""

from __future__ import annotations

import errno
import inspect
import os

import pytest

import vault_mem.errors as errors
from vault_mem.errors import CallerError, Fault, InvalidInput, VaultMemError, WriteFailed
from vault_mem.mcp_server.answers import IS_ERROR, error_answer, to_result
from vault_mem.settings import Settings

CLASSES = [c for _, c in inspect.getmembers(errors, inspect.isclass)
           if issubclass(c, VaultMemError) and c not in (VaultMemError, CallerError, Fault)]


def make(cls: type[VaultMemError]) -> VaultMemError:
    return cls("ref", "what happened") if issubclass(cls, InvalidInput) else cls("what happened")


def test_every_error_is_either_the_callers_or_a_fault_and_the_docstring_draws_them_all() -> None:
    doc = errors.__doc__ or ""
    for cls in CLASSES:
        assert issubclass(cls, CallerError) != issubclass(cls, Fault), cls
        assert f" {cls.__name__} " in doc, f"{cls.__name__} is missing from the tree in errors.py"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_faults_answer_error_with_advice_and_caller_errors_never_do(cls: type[VaultMemError]) -> None:
    answer = error_answer(make(cls))
    result = to_result("memory_read", answer, Settings().max_answer_chars)
    if issubclass(cls, Fault):
        assert answer["status"] == "error" and isinstance(answer["retry"], bool)
        assert answer["message"].startswith("what happened; ") and len(answer["message"]) > len("what happened; ")
        assert result.is_error
    else:
        assert answer["status"] in ("invalid", "not_found", "conflict", "forbidden") and "retry" not in answer
        assert result.is_error == (answer["status"] in IS_ERROR)


def caused(code: int) -> WriteFailed:
    try:
        try:
            raise OSError(code, os.strerror(code))
        except OSError as exc:
            raise WriteFailed("writing x.md failed") from exc
    except WriteFailed as failed:
        return failed


def test_a_write_fault_advises_by_the_os_error_it_came_from() -> None:
    full = caused(errno.ENOSPC)
    assert not full.retry and full.message == "writing x.md failed; free some disk space, then retry"
    read_only = caused(errno.EROFS)
    assert not read_only.retry and "read-only" in read_only.message
    flaky = caused(errno.EIO)
    assert flaky.retry and flaky.message.endswith("a retry may succeed")
    no_cause = WriteFailed("x.md is not a regular file")
    assert not no_cause.retry and "will not help" in no_cause.message


def test_a_raise_site_can_overrule_the_classs_advice() -> None:
    busy = errors.IndexBusy("locked", retry=False)
    assert not busy.retry and busy.message == "locked; retrying will not help until this is fixed"
    told = errors.IndexBusy("locked", advice="wait for the build")
    assert told.retry and told.message == "locked; wait for the build"
