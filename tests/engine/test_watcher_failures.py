"""A watcher batch whose indexing fails inside the engine (``VaultIndex.apply`` makes each note's
document): the failure is injected into the engine's own module, so this test lives beside the
engine; the watcher's other failure tests are tests/integration/test_watcher.py."""

from __future__ import annotations

from typing import Any

from conftest import eventually, stored
from test_watcher import live, many_notes, note  # noqa: F401 (live is a fixture)

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

    def document_of(note: Any, rel: str) -> dict[str, Any]:
        if rel == "f1/n5.md":
            raise SystemError("injected: this note's document cannot be made")
        return real(note, rel)

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
