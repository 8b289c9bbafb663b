"""The vectors of a vault's notes, kept beside its index (docs/ranking.md, "By meaning").

On disk: a folder per model (``<index>/meaning/<fingerprint>/``) of numbered shards, each one
``.npz`` file written whole to a temporary name and renamed into place, so a shard is there
entirely or not at all (Ctrl-C and kill -9 lose at most the batch being embedded, which the next
start embeds again). A shard holds float16 rows and a JSON list of ``[path, etag, rows]`` entries
in row order; a later shard's entry for a path replaces an earlier one, and an entry of no rows
with an empty etag says the note is gone. When the rows of replaced or gone notes outnumber the
live ones, every live row is written to one new *base* shard and the older shards are deleted;
a start reads from the newest base shard on, so a stop between the two steps changes nothing.
Another model's folder is deleted when this one opens: vectors of two models never mix.

Two processes may keep one store (a server and ``vault-mem index --meaning-model``). Every write
holds the folder's lock and first reads the shards the other wrote since this process last looked
(``_catch_up``: from the newest base shard on when there is a new one), so a shard is numbered
after every other, a compaction's base shard holds the other process's notes too, and the
shards it deletes are ones whose rows it holds. ``refresh`` does the same between writes: the
embedder calls it each time it looks at the index, so a running server takes in what another
process embedded.

In memory: one float32 matrix of every row (searched by one matrix-vector product), the note of
each row, and each note's etag and rows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

from vault_mem.settings import Settings
from vault_mem.vault.portable import replace_file, unlink_file

SHARD = re.compile(r"shard-(\d{8})(-base)?\.npz")


def etags_on_disk(folder: Path) -> dict[str, str]:
    """path -> etag of every note whose vectors are stored in ``folder``, from the shards' entries
    alone (no row is read), without the lock and writing nothing (``vault-mem status``). A shard
    gone or unreadable meanwhile (another process compacting, a disk fault) is passed over."""
    import numpy as np

    shards = sorted((int(m.group(1)), path, bool(m.group(2))) for path in folder.iterdir()
                    if (m := SHARD.fullmatch(path.name)))
    bases = [i for i, (_, _, base) in enumerate(shards) if base]
    notes: dict[str, str] = {}
    for _, path, _ in shards[bases[-1] if bases else 0:]:
        try:
            with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
                keys = json.loads(bytes(data["keys"]).decode("utf-8"))
            entries = [(str(note), str(etag)) for note, etag, _ in keys]
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            continue
        for note, etag in entries:
            if etag:
                notes[note] = etag
            else:
                notes.pop(note, None)
    return notes


class VectorStore:
    """The vectors of one model for one vault. Thread-safe: one writer (the embedder) and any
    number of searching threads."""

    def __init__(self, folder: Path, dim: int, label: dict[str, Any] | None = None, *, config: Settings) -> None:
        import numpy as np

        self.config = config  # how long a replace waits for a file held open (Windows)
        self._np = np
        self.folder = folder
        self.dim = dim
        self._label = label
        self._lock = threading.Lock()
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._owner = np.zeros(0, dtype=np.int32)  # the note slot of each row; -1: a dead row
        self._used = 0
        self._notes: dict[str, tuple[str, list[int]]] = {}  # path -> (etag, its row numbers)
        self._slots: dict[str, int] = {}
        self._paths: list[str] = []
        self._next = 0
        self._seen = -1  # the number of the newest shard whose rows are in memory
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(self.folder / "write.lock"):
            self._catch_up()

    @classmethod
    def open(cls, index_dir: Path, fingerprint: str, dim: int, label: dict[str, Any] | None = None, *,
             config: Settings) -> VectorStore:
        """The store of the model ``fingerprint`` beside the index at ``index_dir``; ``label`` (the
        model's name and folder) is kept in its ``model.json`` for ``vault-mem status``."""
        root = index_dir / "meaning"
        if root.is_dir():
            for other in root.iterdir():
                if other.is_dir() and other.name != fingerprint:
                    shutil.rmtree(other, ignore_errors=True)
        store = cls(root / fingerprint, dim, label, config=config)
        store._write_label()
        return store

    def _write_label(self) -> None:
        """``model.json``, unless it is there and the same (status reads it)."""
        if self._label is None:
            return
        text = json.dumps(self._label, ensure_ascii=False)
        target = self.folder / "model.json"
        with contextlib.suppress(OSError):
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                tmp = self.folder / f".model.json.{os.getpid()}.tmp"
                tmp.write_text(text, encoding="utf-8")
                replace_file(tmp, target, config=self.config)

    # -- reading ---------------------------------------------------------------------------

    def etags(self) -> dict[str, str]:
        with self._lock:
            return {path: etag for path, (etag, _) in self._notes.items()}

    def __len__(self) -> int:
        return len(self._notes)

    def rows(self) -> int:
        with self._lock:
            return sum(len(rows) for _, rows in self._notes.values())

    def nearest(self, query: Any, notes: int) -> list[tuple[str, float]]:
        """The ``notes`` paths whose best chunk is most similar to the unit row ``query``, best
        first, with that similarity (cosine)."""
        np = self._np
        with self._lock:
            used = self._used
            matrix, owner, paths = self._matrix[:used], self._owner[:used].copy(), self._paths
        if not used or notes < 1:
            return []
        sims = matrix @ np.asarray(query, dtype=np.float32)
        sims[owner < 0] = -np.inf
        want = min(used, notes * 4)
        while True:
            top = np.argpartition(-sims, want - 1)[:want] if want < used else np.arange(used)
            top = top[np.argsort(-sims[top], kind="stable")]
            best: dict[int, float] = {}
            for row in top:
                slot = int(owner[row])
                if slot >= 0 and slot not in best:
                    best[slot] = float(sims[row])
                    if len(best) == notes:
                        break
            if len(best) == notes or want >= used:
                return [(paths[slot], sim) for slot, sim in best.items()]
            want = min(used, want * 4)

    def similarities(self, query: Any, paths: list[str]) -> dict[str, float]:
        """The similarity (cosine of the best chunk) of each of ``paths`` that has vectors to the
        unit row ``query``: the fusion's other candidates, found by words (search/fusion.py)."""
        np = self._np
        with self._lock:
            wanted = [(path, self._notes[path][1]) for path in paths if path in self._notes]
            blocks = [(path, self._matrix[rows]) for path, rows in wanted if rows]
        vector = np.asarray(query, dtype=np.float32)
        return {path: float(np.max(block @ vector)) for path, block in blocks}

    # -- writing ---------------------------------------------------------------------------

    def put(self, notes: list[tuple[str, str, Any]]) -> None:
        """Store ``(path, etag, vectors)`` for each note (vectors: rows of ``dim`` floats, none for a
        note without text), replacing what was stored for those paths: one shard, written whole."""
        self._commit([(path, etag, vectors) for path, etag, vectors in notes])

    def remove(self, paths: list[str]) -> None:
        """Forget the vectors of ``paths`` (notes gone from the vault)."""
        gone = [p for p in paths if p in self._notes]
        if gone:
            empty = self._np.zeros((0, self.dim), dtype=self._np.float32)
            self._commit([(path, "", empty) for path in gone])

    def _commit(self, entries: list[tuple[str, str, Any]]) -> None:
        np = self._np
        if not entries:
            return
        blocks = [np.asarray(v, dtype=np.float32).reshape(-1, self.dim) for _, _, v in entries]
        keys = [[path, etag, len(block)] for (path, etag, _), block in zip(entries, blocks, strict=True)]
        rows = np.concatenate(blocks) if blocks else np.zeros((0, self.dim), dtype=np.float32)
        with self._writing():
            self._write_shard(self._next, rows, keys, base=False)
            with self._lock:
                self._apply(rows, keys)
                self._seen = self._next
            self._next += 1
        if self._dead_rows() > max(self._used - self._dead_rows(), 1024):
            self._compact()

    def refresh(self) -> None:
        """Take in the shards another process wrote since this one last looked."""
        if not self.folder.is_dir():  # emptied meanwhile (a first build clears the index folder)
            return
        with FileLock(self.folder / "write.lock"):
            self._catch_up()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Held while a shard is written: a second process embedding the same vault (a server and
        ``vault-mem index --meaning-model``) numbers its shards after this one's, never over them."""
        # The index folder may have been emptied since (a first build clears it; a rebuild keeps meaning/).
        self.folder.mkdir(parents=True, exist_ok=True)
        with FileLock(self.folder / "write.lock"):
            self._write_label()
            self._catch_up()
            yield

    def _write_shard(self, number: int, rows: Any, keys: list[list[Any]], base: bool) -> None:
        np = self._np
        name = f"shard-{number:08d}{'-base' if base else ''}.npz"
        tmp = self.folder / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        with tmp.open("wb") as f:
            np.savez(f, rows=rows.astype(np.float16),
                     keys=np.frombuffer(json.dumps(keys).encode("utf-8"), dtype=np.uint8))
            f.flush()
            os.fsync(f.fileno())
        replace_file(tmp, self.folder / name, config=self.config)

    def _apply(self, rows: Any, keys: list[list[Any]]) -> None:
        """Take a shard's rows and entries into memory (the lock held, or not yet shared)."""
        np = self._np
        need = self._used + len(rows)
        if need > len(self._matrix):
            grown = max(need, len(self._matrix) * 3 // 2, 256)
            matrix = np.zeros((grown, self.dim), dtype=np.float32)
            matrix[: self._used] = self._matrix[: self._used]
            owner = np.full(grown, -1, dtype=np.int32)
            owner[: self._used] = self._owner[: self._used]
            self._matrix, self._owner = matrix, owner
        self._matrix[self._used: need] = rows
        at = self._used
        for path, etag, count in keys:
            old = self._notes.pop(path, None)
            if old is not None:
                self._owner[old[1]] = -1
            if not etag:
                continue
            slot = self._slots.get(path)
            if slot is None:
                slot = self._slots[path] = len(self._paths)
                self._paths.append(path)
            self._owner[at: at + count] = slot
            self._notes[path] = (etag, list(range(at, at + count)))
            at += count
        self._used = need

    def _dead_rows(self) -> int:
        return int((self._owner[: self._used] < 0).sum())

    def _compact(self) -> None:
        """Write every live row to one base shard, then delete the shards before it."""
        np = self._np
        with self._writing():
            with self._lock:
                keys = [[path, etag, len(rows)] for path, (etag, rows) in self._notes.items()]
                order = [r for _, (_, rows) in self._notes.items() for r in rows]
                rows = self._matrix[order] if order else np.zeros((0, self.dim), dtype=np.float32)
            number = self._next
            self._write_shard(number, rows, keys, base=True)
            self._next += 1
            for old in self._shards():
                if old[0] < number:
                    with contextlib.suppress(OSError):
                        unlink_file(old[1], config=self.config)
            with self._lock:
                self._reset()
                self._apply(rows, keys)
                self._seen = number

    def _reset(self) -> None:
        np = self._np
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)
        self._owner = np.zeros(0, dtype=np.int32)
        self._used = 0
        self._notes, self._slots, self._paths = {}, {}, []

    # -- start-up ---------------------------------------------------------------------------

    def _shards(self) -> list[tuple[int, Path, bool]]:
        """The shards, in order (the write lock held: a temporary file is then a dead writer's)."""
        found = []
        for path in self.folder.iterdir():
            m = SHARD.fullmatch(path.name)
            if m:
                found.append((int(m.group(1)), path, bool(m.group(2))))
            elif path.name.endswith(".tmp"):  # cut short: every writer holds the lock the caller holds
                with contextlib.suppress(OSError):
                    unlink_file(path, config=self.config)
        return sorted(found)

    def _catch_up(self) -> None:
        """Read the shards written since ``_seen`` (all of them at the start): from the newest base
        shard among them on, which then replaces what memory held. The write lock held."""
        np = self._np
        shards = self._shards()
        new = [shard for shard in shards if shard[0] > self._seen]
        bases = [i for i, (_, _, base) in enumerate(new) if base]
        read: list[tuple[Any, list[list[Any]]]] = []
        for _, path, _ in new[bases[-1] if bases else 0:]:
            try:
                with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
                    rows = data["rows"].astype(np.float32)
                    keys = json.loads(bytes(data["keys"]).decode("utf-8"))
                if rows.shape[1:] != (self.dim,) or sum(k[2] for k in keys) != len(rows):
                    raise ValueError("rows and entries disagree")
            except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile):
                # Unreadable (a disk fault, another version): its notes are embedded again.
                with contextlib.suppress(OSError):
                    unlink_file(path, config=self.config)
                continue
            read.append((rows, keys))
        with self._lock:
            if bases:
                self._reset()
            for rows, keys in read:
                self._apply(rows, keys)
            if new:
                self._seen = new[-1][0]
        if shards:
            self._next = max(self._next, shards[-1][0] + 1)
