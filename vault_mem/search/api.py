"""The search engine's one face: everything above ``search/`` imports from here, and from nowhere
else inside it (``tests/unit/test_layers.py`` keeps it so, for tests too: only tests/engine/
reaches behind it). What crosses it is vault-mem's own: paths, notes, plain dicts, document
numbers (ints, valid within one snapshot) and the dataclasses below; no Whoosh object, and no
engine class to subclass. The list with its types is docs/architecture.md, "The engine's face".

Look (one call's consistent view of the committed index):
    reading(index, mask, visible) -> Snapshot
                        a snapshot for one call; ``Snapshot``'s methods give document sets,
                        orders, records, columns, lexicons, counts (``search/snapshot.py``)
    note_count(index) -> int
                        how many notes the index holds now
    PATH_KEY_FIELDS     the key fields ``Snapshot.path_key_docs`` answers from the path column
Search (docs/ranking.md):
    search_terms, match_forms, stem_of, score_notes, best_notes -> Ranked, scores_of,
    fused_notes -> Fused (with the meaning stage), closest_names, newest_first_key,
    ranked_newest_key
    resembling, Rarity, note_said -> Said, likeness
                        the notes that say nearly the same as a text (``search/similar.py``,
                        ``search/facts.py``)
    cached_while_unchanged
                        keep what is derived from one version of a file (the engine's cache)
Change and keep up (the commit side, search/store.py and search/commits.py):
    VaultIndex          the index of one vault: ``apply`` changes (or ``submit`` then ``commit_batch``,
                        for a write tool that journals between them), ``generation``, ``state``
    sync -> SyncReport, reconcile
                        bring the index up to the files (a build, or only what changed)
    attach_history, same_content, stat_state, records_under, SCHEMA_VERSION
                        what the watcher and the start-up check compare and submit
The index folder and its processes:
    has_index, usable_index_dir, live, present, note_present, merge_due, merge_lock, merge_main,
    Progress, ProgressFile
Once per process, by its composition root, with its settings (docs/settings.md):
    install_whoosh_patches(config)
                        the Whoosh patches and the sizes they work by (each patch switchable:
                        search/whoosh/patches.py)
    size_cache(cache_mb)
                        the size of the one cache the process's indexes share (search/lru.py)

How names and text are cut (``vault/names.py``) and folded (``vault/fields.py:fold``) is not the
engine's: import it from there.
"""

from __future__ import annotations

from vault_mem.search.build import SyncReport, reconcile, sync
from vault_mem.search.columns import PATH_KEY_FIELDS
from vault_mem.search.facts import Said
from vault_mem.search.folder import has_index, usable_index_dir
from vault_mem.search.fusion import Fused, fused_notes
from vault_mem.search.gitfollow import attach_history
from vault_mem.search.lru import cached_while_unchanged, size_cache
from vault_mem.search.merge import main as merge_main
from vault_mem.search.merge import merge_due, merge_lock
from vault_mem.search.presence import live, note_present, present
from vault_mem.search.progress import Progress, ProgressFile
from vault_mem.search.query import newest_first_key, ranked_newest_key
from vault_mem.search.ranking import match_forms, score_notes, search_terms, stem_of
from vault_mem.search.schema import SCHEMA_VERSION
from vault_mem.search.similar import Rarity, likeness, note_said, resembling
from vault_mem.search.snapshot import Snapshot, note_count, reading, records_under
from vault_mem.search.store import VaultIndex, same_content, stat_state
from vault_mem.search.topk import Ranked, best_notes, scores_of
from vault_mem.search.vocabulary import closest_names
from vault_mem.search.whoosh.patches import install_from_environment as install_whoosh_patches

__all__ = [
    "PATH_KEY_FIELDS",
    "SCHEMA_VERSION",
    "Fused",
    "Progress",
    "ProgressFile",
    "Ranked",
    "Rarity",
    "Said",
    "Snapshot",
    "SyncReport",
    "VaultIndex",
    "attach_history",
    "best_notes",
    "cached_while_unchanged",
    "closest_names",
    "fused_notes",
    "has_index",
    "install_whoosh_patches",
    "likeness",
    "live",
    "match_forms",
    "merge_due",
    "merge_lock",
    "merge_main",
    "newest_first_key",
    "note_count",
    "note_present",
    "note_said",
    "present",
    "ranked_newest_key",
    "reading",
    "reconcile",
    "records_under",
    "resembling",
    "same_content",
    "score_notes",
    "scores_of",
    "search_terms",
    "size_cache",
    "stat_state",
    "stem_of",
    "sync",
    "usable_index_dir",
]
