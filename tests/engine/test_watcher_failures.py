"""A watcher batch whose indexing or commit fails inside the engine (``VaultIndex.apply`` makes each
note's document and commits): the failures are injected into the engine itself, so these tests live
beside it; the watcher's other tests are tests/integration/test_watcher.py."""

from __future__ import annotations

from typing import Any

from conftest import eventually, stored
from test_watcher import live, many_notes, note, wait_in_sync  # noqa: F401 (live is a fixture)

from vault_mem.search import store as store_module
from vault_mem.vault.reader import file_etag


def test_a_change_that_keeps_failing_holds_back_no_other_and_is_left_to_the_check(
        live, monkeypatch, tuned, caplog) -> None:  # noqa: F811 (the fixture imported above)
    """A note whose indexing raises every time fails its batch once; then each path of it is applied
    on its own: the other notes are indexed, and the bad one, after ``watch_retries`` attempts, is
    said and left to the check of every note. Still no walk of the vault."""
    tuned(watch_retry_pause=0.05, watch_retries=3)
    walked: list[str] = []
    vault, w = live(many_notes(40), pace=walked.append, reconcile_every=3600)
    real = store_module.document_of  # the engine makes each note's document (VaultIndex.apply)

    def document_of(note: Any, rel: str, head_chars: int) -> dict[str, Any]:
        if rel == "f1/n5.md":
            raise SystemError("injected: this note's document cannot be made")
        return real(note, rel, head_chars)

    monkeypatch.setattr(store_module, "document_of", document_of)
    (vault.root / "f1/n5.md").write_text(note("Note 5", "body 5, edited"))  # most often one batch
    (vault.root / "f2/n6.md").write_text(note("Note 6", "body 6, edited"))
    eventually(lambda: w.given_up == 1, timeout=15.0, what="the bad note given up")
    assert w.wait_idle(15.0)
    assert stored(vault.index, "f2/n6.md")["etag"] == file_etag((vault.root / "f2/n6.md").read_bytes())
    assert stored(vault.index, "f1/n5.md")["etag"] != file_etag((vault.root / "f1/n5.md").read_bytes())
    assert walked == []
    said = [r.getMessage() for r in caplog.records if r.name == "vault_mem.watch" and r.levelname == "ERROR"]
    assert any("f1/n5.md" in line and "left to the check" in line for line in said), said


def test_a_failed_commit_is_said_and_its_change_applied_again_without_a_walk_of_the_vault(
        live, monkeypatch, tuned, caplog) -> None:  # noqa: F811 (the fixture imported above)
    """An internal error inside the watcher's commit (issue 58: a SystemError raised in Whoosh's
    commit) is logged with the error and the note it concerned, and that one change is applied again
    on its own: no walk of the vault (``pace`` sees each file any walk reaches, and sees none), and
    the watcher takes later saves as before (a failed commit lets go of the index's lock)."""
    tuned(watch_retry_pause=0.05)
    walked: list[str] = []
    vault, w = live(many_notes(200), pace=walked.append, reconcile_every=3600)
    real = vault.index.commit_live
    failed: list[str] = []

    def commit_failing_once(writer: Any, added: Any = None) -> None:
        if not failed:
            failed.append("once")

            def broken(_writer: Any, _segments: Any) -> Any:
                raise SystemError("Objects/tupleobject.c:927: bad argument to internal function")

            writer.commit(mergetype=broken)  # raises inside Whoosh's commit, its lock held
        real(writer, added)

    monkeypatch.setattr(vault.index, "commit_live", commit_failing_once)
    (vault.root / "f3/n7.md").write_text(note("Note 7", "body 7, edited in an editor"))
    wait_in_sync(w)
    assert failed and w.retried == 1 and w.given_up == 0
    assert walked == [], "a failed commit of one change cost a walk of the vault"
    said = [r.getMessage() for r in caplog.records if r.name == "vault_mem.watch" and r.levelname == "ERROR"]
    assert any("f3/n7.md" in line and "SystemError" in line and "again" in line for line in said), said
    assert not any("whole vault" in r.getMessage() for r in caplog.records)
    (vault.root / "f0/n8.md").write_text(note("Note 8", "body 8, edited later"))  # the lock was let go
    wait_in_sync(w)
    assert walked == []
