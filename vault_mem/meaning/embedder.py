"""The meaning stage of one served vault: its model, its vectors, and the background embedder
that keeps the vectors up to the index (docs/ranking.md, "By meaning").

The embedder runs in one daemon thread started after the keyword index is ready. Each pass
compares the index's notes (path -> etag) with the stored ones: a note that is new or whose etag
changed is embedded again, a note gone is forgotten, an unchanged one is never touched. Notes are
embedded a batch at a time, each batch one shard (meaning/store.py), so a stop loses at most one
batch. Answers never wait for it: they rank by what is embedded so far and say
``meaning: {done, total}`` until every note is: from the moment a server has the model
(``Meaning.expect``), before the embedder has started or counted what waits, so that no answer
looks final while notes wait.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from vault_mem.meaning.chunks import TEXTS, note_chunks
from vault_mem.meaning.model import SentenceModel, load_model
from vault_mem.meaning.store import VectorStore
from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.meaning")
T = TypeVar("T")

NotesNow = Callable[[], dict[str, str]]  # the index's notes now: path -> etag
ReadNote = Callable[[str], "tuple[str, str] | None"]  # path -> (title, body), None when unreadable


def store_name(model: SentenceModel) -> str:
    """The folder of ``model``'s vectors beside an index: its weights' fingerprint and the version of
    the texts embedded (meaning/chunks.py ``TEXTS``), so that vectors of another model, or of texts
    made another way, are never compared with these: opening the store deletes them."""
    return f"{model.fingerprint}-texts{TEXTS}"


class Meaning:
    """A model and the vectors of one vault; ``nearest(query, k)`` is what the search asks for."""

    def __init__(self, model: SentenceModel, store: VectorStore, query_cache: int | None = None) -> None:
        self.config = model.config  # the settings the model was loaded with
        self.model = model
        self.store = store
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self._query_cache = self.config.meaning_query_cache if query_cache is None else query_cache
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._indexed: Callable[[], int] | None = None  # the notes the index holds, while serving (``expect``)
        self.embedder: Embedder | None = None

    @classmethod
    def open(cls, model_dir: Path | str, index_dir: Path, runtime: str = "auto", *, config: Settings) -> Meaning:
        """Load the model in ``model_dir`` (run by ``runtime``: meaning/model.py, with ``config``) and
        its vectors beside the index. Raises MeaningUnavailable or InvalidInput when it cannot."""
        model = load_model(model_dir, runtime, config=config)
        label = {"model": model.name, "folder": str(model.folder)}
        return cls(model, VectorStore.open(index_dir, store_name(model), model.dim, label, config=config))

    def for_index(self, index_dir: Path, *, config: Settings) -> Meaning:
        """The same model (loaded once) with the vectors of another vault's index (serve with
        several vaults: one model, each vault its own vector store)."""
        model = self.model
        label = {"model": model.name, "folder": str(model.folder)}
        return type(self)(model, VectorStore.open(index_dir, store_name(model), model.dim, label, config=config))

    def describe(self) -> dict[str, Any]:
        """What ``status`` and ``doctor`` show: the model and how many notes have vectors."""
        return {"model": self.model.name, "folder": str(self.model.folder), "dim": self.model.dim,
                "runtime": self.model.runtime, "query_bits": self.model.query_bits,
                "notes": len(self.store), "chunks": self.store.rows()}

    def query_vector(self, text: str) -> Any:
        """The unit row of a query (the last few are kept: an agent often repeats one)."""
        with self._lock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                return hit
        vector = self.model.encode_query(text)
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > self._query_cache:
                self._queries.popitem(last=False)
        return vector

    def nearest(self, text: str, notes: int) -> list[tuple[str, float]]:
        """The ``notes`` paths most similar to ``text`` (by their best chunk), best first."""
        if not len(self.store):
            return []
        return self.store.nearest(self.query_vector(text), notes)

    def similarities(self, text: str, paths: list[str]) -> dict[str, float]:
        """The similarity to ``text`` of each of ``paths`` that has vectors (its best chunk's)."""
        if not paths or not len(self.store):
            return {}
        return self.store.similarities(self.query_vector(text), paths)

    def run_alongside(self, work: Callable[[], T]) -> Future[T]:
        """Run ``work`` on a helper thread (in the caller's context), so that a search ranks by
        words there while this thread embeds its query: the model and the matrix product release
        the interpreter's lock, the keyword ranking needs it."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vault-mem-keyword")
            pool = self._pool
        return pool.submit(contextvars.copy_context().run, work)

    def expect(self, indexed: Callable[[], int]) -> None:
        """The notes will be embedded in the background (``start``, once the index is ready): until
        the embedder's first pass has counted what waits, ``progress`` is ``{done, total}`` from the
        notes stored and ``indexed()``, the notes the index holds now."""
        self._indexed = indexed

    def progress(self) -> dict[str, int] | None:
        """``{done, total}`` while notes wait to be embedded, else None. From ``expect`` on, None
        only once a pass of the embedder found every note embedded."""
        embedder = self.embedder
        if embedder is not None and embedder.counted:
            return embedder.progress()
        if self._indexed is None:
            return None  # not embedding in the background (the CLI's search embeds first)
        total = self._indexed()
        return {"done": min(len(self.store), total), "total": total}

    def embed_pending(self, notes: NotesNow, read: ReadNote,
                      on_progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every note not embedded yet, here and now (``vault-mem index``); the count embedded."""
        embedder = Embedder(self, notes, read)
        return embedder.catch_up(on_progress)

    def start(self, notes: NotesNow, read: ReadNote, idle_seconds: float | None = None,
              version: Callable[[], object] | None = None) -> Embedder:
        """Start the background embedder (once); see ``Embedder`` for ``version``. A server calls
        ``expect`` first (runtime/meaning.py), so that answers say what waits from the start."""
        if self.embedder is None:
            self.embedder = Embedder(self, notes, read, idle_seconds=idle_seconds, version=version)
            self.embedder.start()
        return self.embedder

    def stop(self) -> None:
        if self.embedder is not None:
            self.embedder.stop()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)


class Embedder:
    """Keeps the vectors up to the index, in a background thread (see the module docstring).

    ``version()``, when given, names the index's state (its generation): a pass runs only when it
    moved since the last complete pass, or when ``wake`` is called, so an idle server reads no
    column every tick."""

    def __init__(self, meaning: Meaning, notes: NotesNow, read: ReadNote, batch_notes: int | None = None,
                 idle_seconds: float | None = None, version: Callable[[], object] | None = None) -> None:
        config = meaning.config
        self.config = config
        self._version = version
        self._seen: object = None
        self.meaning = meaning
        self._notes = notes
        self._read = read
        self._batch = config.meaning_batch_notes if batch_notes is None else batch_notes
        self._idle = config.meaning_idle if idle_seconds is None else idle_seconds
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._state_lock = threading.Lock()
        self._progress: dict[str, int] | None = None
        self._thread: threading.Thread | None = None
        self.batch_done = threading.Event()  # set after each stored batch (tests wait on it)
        self.passes = 0
        self.counted = False  # a pass has counted the notes waiting (``progress`` holds them since)
        self.error: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vault-mem-meaning", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.config.meaning_stop_wait if timeout is None else timeout)

    def wake(self) -> None:
        """Look for changed notes now rather than at the next idle tick."""
        self._wake.set()

    def progress(self) -> dict[str, int] | None:
        with self._state_lock:
            return None if self._progress is None else dict(self._progress)

    def _run(self) -> None:
        woken = True
        while not self._stop.is_set():
            try:
                self.meaning.store.refresh()  # what another process embedded meanwhile
                now = self._version() if self._version is not None else None
                if woken or now is None or now != self._seen:
                    self.catch_up()
                    self._seen = now
                self.error = None
            except Exception as exc:  # the server goes on by words; the next pass tries again
                if self.error != repr(exc):
                    log.exception("meaning: embedding failed")
                self.error = repr(exc)
            self.passes += 1
            woken = self._wake.wait(self._idle)
            self._wake.clear()

    def catch_up(self, on_progress: Callable[[int, int], None] | None = None) -> int:
        """One pass: forget notes gone, embed the new and changed ones. Returns how many it embedded."""
        store = self.meaning.store
        wanted = self._notes()
        stored = store.etags()
        store.remove([p for p in stored if p not in wanted])
        todo = sorted(p for p, etag in wanted.items() if stored.get(p) != etag)
        total = len(wanted)
        done = total - len(todo)
        if not todo:
            self._set_progress(None)
            return 0
        self._set_progress({"done": done, "total": total})
        embedded = 0
        for start in range(0, len(todo), self._batch):
            if self._stop.is_set():
                break
            batch = todo[start: start + self._batch]
            store.put(self._embed(batch, wanted))
            embedded += len(batch)
            done += len(batch)
            self._set_progress({"done": done, "total": total} if done < total else None)
            if on_progress is not None:
                on_progress(done, total)
            self.batch_done.set()
        self._set_progress(None)
        return embedded

    def _embed(self, paths: list[str], etags: dict[str, str]) -> list[tuple[str, str, Any]]:
        model = self.meaning.model
        texts: list[str] = []
        owners: list[int] = []
        for i, path in enumerate(paths):
            note = self._read(path)
            for chunk in note_chunks(*note, self.config.meaning_chunk_chars,
                                     self.config.meaning_max_chunks) if note is not None else []:
                texts.append(chunk)
                owners.append(i)
        vectors = model.encode(texts)
        out = []
        for i, path in enumerate(paths):
            rows = [r for r, owner in enumerate(owners) if owner == i]
            out.append((path, etags[path], vectors[rows]))
        return out

    def _set_progress(self, value: dict[str, int] | None) -> None:
        with self._state_lock:
            self._progress = value
            self.counted = True
