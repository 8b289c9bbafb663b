"""Random file operations on a real vault with a running Watcher: after every step, once the
watcher is idle, the index answers exactly what the files say (docs/index-and-sync.md, "While serving").

Each step is one thing an editor, a file manager or git does: create, edit in place, atomic
save (temp file renamed over the note), rename or move a note, move a folder, delete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import eventually
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from test_watcher import disk_etags, index_etags

from vault_mem.reads.read import memory_read
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault, view_of
from vault_mem.settings import current as current_settings
from vault_mem.vault.paths import display_path
from vault_mem.vault.reader import file_etag

FOLDERS = ["", "a", "a/b", "c", "c/d/e", "Ünï cödé"]
NAMES = ["n1", "n2", "Note three", "émoji 🙂", "x"]
FOLDER_NAMES = ["a", "b", "moved", "z z"]
bodies = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60)
uids = st.none() | st.sampled_from(["k1", "k2", "k3"])


def render(title: str, body: str, uid: str | None) -> bytes:
    head = f"id: {uid}\n" if uid else ""
    return f"---\n{head}title: {title!r}\n---\n{body}\n".encode()


class LiveVault(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="vault-mem-live-"))
        self.root = self.base / "vault"
        (self.root / "a").mkdir(parents=True)
        (self.root / "a/start.md").write_bytes(render("Start", "first", "k0"))
        self.index = VaultIndex(self.root, self.base / "ix", config=current_settings())
        sync(self.index, procs=1)
        self.watcher = Watcher(self.index)
        self.watcher.start()

    def teardown(self) -> None:
        try:
            self.check_index_equals_files()
        finally:
            self.watcher.stop()
            self.index.close()
            shutil.rmtree(self.base, ignore_errors=True)

    # -- what is on disk -------------------------------------------------------------------

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*.md"))

    def folders(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_dir())

    # -- steps -----------------------------------------------------------------------------

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES), body=bodies, uid=uids)
    def create(self, folder: str, name: str, body: str, uid: str | None) -> None:
        path = self.root / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render(name, body, uid))

    @rule(data=st.data(), body=bodies)
    def edit_in_place(self, data: st.DataObject, body: str) -> None:
        files = self.files()
        if files:
            rel = data.draw(st.sampled_from(files), label="file")
            with (self.root / rel).open("ab") as handle:
                handle.write(body.encode() + b"\n")

    @rule(data=st.data(), body=bodies, uid=uids)
    def atomic_save(self, data: st.DataObject, body: str, uid: str | None) -> None:
        files = self.files()
        if files:
            rel = data.draw(st.sampled_from(files), label="file")
            target = self.root / rel
            temp = target.parent / f".{target.name}.tmp"
            temp.write_bytes(render(target.stem, body, uid))
            os.replace(temp, target)

    @rule(data=st.data(), folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, folder: str, name: str) -> None:
        files = self.files()
        target = self.root / folder / f"{name}.md"
        if files and not target.exists():
            rel = data.draw(st.sampled_from(files), label="file")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.root / rel, target)

    @rule(data=st.data(), into=st.sampled_from(FOLDERS), name=st.sampled_from(FOLDER_NAMES))
    def move_folder(self, data: st.DataObject, into: str, name: str) -> None:
        folders = self.folders()
        if not folders:
            return
        source = data.draw(st.sampled_from(folders), label="folder")
        target = f"{into}/{name}" if into else name
        if (self.root / target).exists() or target == source or target.startswith(source + "/"):
            return
        (self.root / target).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / source, self.root / target)

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        files = self.files()
        if files:
            (self.root / data.draw(st.sampled_from(files), label="file")).unlink()

    # -- the check -------------------------------------------------------------------------

    def check_index_equals_files(self) -> None:
        def settled() -> bool:
            return self.watcher.wait_idle(10) and index_etags(self.index) == disk_etags(self.root)

        try:
            eventually(settled, timeout=15, what="index equal to the files")
        except AssertionError:
            assert index_etags(self.index) == disk_etags(self.root)  # shows the difference
            raise

    @invariant()
    def index_answers_what_the_files_say(self) -> None:
        self.check_index_equals_files()
        files = self.files()
        if not files:
            return
        rel = files[len(files) // 2]
        with view_of(Vault(self.root, self.index)) as view:
            answer = memory_read(view, {"ref": rel})
        assert answer["status"] == "ok", answer
        assert answer["path"] == display_path(rel)
        assert answer["etag"] == file_etag((self.root / rel).read_bytes())


_health = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def test_live_index_follows_random_file_operations() -> None:
    run = LiveVault.TestCase
    run.settings = settings(max_examples=6, stateful_step_count=12, deadline=None, suppress_health_check=_health)
    run().runTest()


@pytest.mark.slow
def test_live_index_follows_random_file_operations_long() -> None:
    run = LiveVault.TestCase
    run.settings = settings(max_examples=100, stateful_step_count=40, deadline=None, suppress_health_check=_health)
    run().runTest()
