"""Every timing, size and threshold of vault-mem, in one place.

One frozen ``Settings`` holds them, one line each: the default, what it is for, and the page of
``docs/`` that explains it (docs/settings.md lists the ones a person sets, by environment).

Settings are passed, not fetched (docs/settings.md, "Where settings are read"). They are built once
where a process is assembled, its composition root: the command line's commands
(``from_environment``, then ``configure``, in ``cli/__init__.py``), and the entry of each child
process that is not a whole command line (a build worker is handed its parent's index's settings,
the background merge builds its own from the environment in ``runtime/tuning.py``). Only the
command line reads ``current()``; each root hands each part what that part needs. A long-lived
object takes ``config`` in its constructor and keeps it (the index, a git ``Repo``, a sentence
model, the HTTP write server); a function takes the values it uses as parameters, or ``config``
when it uses several; a tool call reaches the index's through what it already holds (the served
vault, the call's view); the searchers an index opens carry its settings to their segments. What
is the process's and not an index's, the one cache's size and the Whoosh patches' sizes, a root
gives once (``size_cache``, ``install_whoosh_patches``). ``tests/unit/test_settings_passed.py``
fails on any other module that reads ``current()``, and on a bare number passed as a wait or a
timeout. A test, or a program embedding vault-mem, gives the object it builds
``config=dataclasses.replace(Settings(), name=value)``; ``configure`` and ``use()`` remain for what
a root assembles itself. Without ``configure`` a root gets the defaults.

What is not here, and why (the numbers that are part of a format or a contract, not a choice):

- Formats on disk: ``SCHEMA_VERSION`` (search/schema.py, with the width ``bits`` its ``_number``
  fields take), ``CACHE_VERSION`` (git/history.py) and ``TEXTS`` (meaning/chunks.py, the texts the
  stored vectors were made from) are versions of files; ``HASH_TABLES``
  (search/whoosh/mapping.py) is the table count of Whoosh's hash file format; ``_HEAD``
  (history/agentstate.py) is where a state file's generation ends; ``FLOAT``, ``INT8``,
  ``INT64`` and ``OPSET`` (meaning/ort.py) are ONNX's codes for three data types and the operator
  set the model's graph is written in; ``NAME_CHARS`` (served/vaults.py), the longest vault name,
  is part of the permalinks a lineage across vaults writes into notes (docs/vaults.md).
- Sizes of what Python holds, counted against a build's memory: ``POSTING_BYTES``, ``TERM_BYTES``
  and ``MERGED_POSTING_BYTES`` (search/whoosh/postings.py): what Python takes, not a choice.
- Bounds others set: ``MAX_SEGMENT_BYTES`` (vault/paths.py), the 255 bytes a file system allows in
  one name; ``MAX_FRAME`` (mcp_server/delegate.py), from the MCP SDK's bound on a request body;
  ``INT64_MIN`` and ``INT64_MAX`` (served/params.py), the integers a parameter may be; ``NEVER``
  (runtime/collector.py), a collector threshold never reached (``gc.set_threshold`` takes a C int,
  no "never"); and the defaults of Whoosh's interfaces that a patch re-implements, kept as Whoosh
  has them (``TermPool``'s ``limitmb``, its ``items``' ``maxfiles``, ``unique_name``'s ``size``).
- Exit statuses (docs/cli.md): ``NOTHING_IMPORTED`` (cli/imports.py) and ``PROBLEMS_FOUND``
  (cli/maintenance.py); and git's all-zero object id, ``ZERO_OID`` (git/repo.py).
- Tables made once per process: ``NOTE_TURNS`` (writes/tools.py), the stripes of the notes' lock
  table (a number that changed mid-process would give one note two locks), and ``_SMALL``
  (search/whoosh/postings.py), the frequencies whose weights are made once at import.
- Short pauses of a process waiting for its own threads or children, or for a test, not choices:
  ``SIGNAL_POLL`` (cli/serve.py, mcp_server/workers.py), between two timed waits, since Ctrl-C and
  SIGTERM reach the waiting thread only between two, on every platform; ``STOP_LAST_LOOK``
  (mcp_server/workers.py), what a worker still gets past the stop's deadline to be seen ended;
  ``HELD_POLL`` (search/hold.py), between two looks of a process a test holds at a named step
  (only a test sets ``VAULT_MEM_HOLD_AT``: no person tunes it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from vault_mem.errors import InvalidInput


@dataclass(frozen=True)
class Settings:
    """Every knob, with its default. Change one by ``dataclasses.replace(current(), name=value)``."""

    # -- The search engine -------------------------------------------------------------------------
    cache_mb: float = 192  # megabytes of the one process-wide cache of columns, lexicons and parsed notes (VAULT_MEM_CACHE_MB) (docs/index-and-scale.md#6-memory-stays-bounded)
    build_batch: int = 500  # files per commit of a serial build, at most (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    build_serial_first_batch: int = 100  # files in the first commit of a serial build, so a first call soon sees notes (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    build_first_segment: int = 1000  # files in the smallest segment a build worker writes (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    build_max_segment: int = 16000  # files in the largest segment a build worker writes (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    build_report_every: int = 50  # files a build worker parses between two progress reports (docs/index-and-sync.md#at-start)
    build_poll: float = 5.0  # seconds a parallel build waits for its workers' news before it checks they are still alive (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    build_worker_stop_wait: float = 10.0  # seconds a build worker gets to stop when the build ends or fails before it is killed (docs/index-and-scale.md#4-the-cold-build-ends-with-few-segments)
    cells_whole_after: int = 2000  # lookups one by one in a column before the whole column is joined instead (docs/index-and-scale.md#6-memory-stays-bounded)
    tiny_segment: int = 20  # documents in a segment a few live commits make, one a later commit may fold in (docs/index-and-scale.md#1-live-commits-merge-only-their-own-crumbs)
    tiny_fold: int = 8  # tiny segments after which the next commit folds them into its own (docs/index-and-scale.md#1-live-commits-merge-only-their-own-crumbs)
    merge_floor: int = 1000  # segments with fewer live documents all share the lowest merge tier (docs/index-and-scale.md#2-merging-happens-in-the-background-one-process-at-a-time)
    merge_factor: int = 8  # segments in one tier before they are merged into one of the next tier (docs/index-and-scale.md#2-merging-happens-in-the-background-one-process-at-a-time)
    merge_max_at_once: int = 32  # segments one merge takes at most, so one merge stays short (docs/index-and-scale.md#2-merging-happens-in-the-background-one-process-at-a-time)
    merge_swap_wait: float = 600.0  # seconds a merge's swap waits for live writers before it gives up this round (docs/index-and-scale.md#3-a-held-lock-is-a-wait-never-a-failure)
    query_max_terms: int = 32  # words of a query that are searched; the rest are left out (docs/ranking.md#the-score)
    query_min_term_chars: int = 3  # shortest word, in characters, that is searched when longer words are present (docs/ranking.md#the-score)
    rank_field_weights: tuple[tuple[str, int], ...] = (("title", 6), ("perm", 5), ("tagtext", 4), ("body", 1))  # what a hit counts in each field: a title outweighs a tag, a tag the body (docs/ranking.md#the-score)
    rank_hit_cap: int = 3  # hits counted per field and term, so repeating a word does not win (docs/ranking.md#the-score)
    rank_stem_hit: float = 0.5  # what a hit of the stem alone counts, against 1 for the exact word (docs/ranking.md#the-score)
    rank_all_terms_bonus: int = 10  # added to a note that holds every word of the query in some form (docs/ranking.md#the-score)
    rank_score_decimals: int = 4  # decimals a score is rounded to, so equal notes tie and order by date (docs/ranking.md#the-score)
    record_head_chars: int = 2000  # body characters the index stores per note for snippets and previews (a change shows after a rebuild) (docs/index-and-scale.md#6-memory-stays-bounded)
    cached_postings_from: int = 64  # documents of a segment holding a term from which its postings list is cached (docs/index-and-scale.md#6-memory-stays-bounded)
    term_set_below: int = 4096  # documents in a segment up to which its terms are kept as a set, so a missing term costs one lookup (docs/index-and-scale.md#6-memory-stays-bounded)
    few_paths: int = 50  # changed paths up to which fingerprints come from stored records when the columns are cold (docs/index-and-sync.md#while-serving)
    topk_direct_below: int = 256  # matches (a bound: the words' holders summed) below which every one is scored without pruning (docs/ranking.md#only-what-can-reach-the-page-is-scored)
    topk_tier_below: int = 256  # notes holding every word below which they are scored without a walk (docs/ranking.md#only-what-can-reach-the-page-is-scored)
    topk_filter_share: int = 4  # a filter admitting under 1/this of the bound: its notes are scored directly (docs/ranking.md#only-what-can-reach-the-page-is-scored)
    topk_margin: float = 1e-12  # relative raise of a bound summed in another order than a score, so pruning never drops a tie (docs/ranking.md#only-what-can-reach-the-page-is-scored)
    inline_postings: int = 4  # postings a term may have and still keep them in its term info (patch 9) (docs/index-and-scale.md#7-whoosh-behind-one-seam-reads-behind-a-query-api)
    tocs_kept: int = 8  # latest index generations whose table of contents the process keeps read (docs/index-and-scale.md#7-whoosh-behind-one-seam-reads-behind-a-query-api)
    run_chunk: int = 8192  # postings per pickled chunk of a build's run file (docs/index-and-scale.md#6-memory-stays-bounded)
    writer_pool_mb: int = 64  # megabytes of postings a build worker's or a merge's writer holds before it sorts them to a run file (docs/index-and-scale.md#6-memory-stays-bounded)
    tiny_kept: int = 64  # tiny segments of its own commits whose notes a process keeps to fold them in; the oldest are forgotten (docs/index-and-scale.md#1-live-commits-merge-only-their-own-crumbs)
    written_kept: int = 10_000  # files a process remembers submitting, so the watcher's events for them cost nothing; the oldest are forgotten (docs/index-and-sync.md#while-serving)
    debris_stale: float = 600.0  # seconds after which a temporary file in the index folder is debris a killed writer left (docs/index-and-scale.md#5-the-index-folder-holds-only-the-index)
    lock_first_retry: float = 0.005  # seconds before the first retry of Whoosh's write lock held by another writer (docs/index-and-scale.md#3-a-held-lock-is-a-wait-never-a-failure)
    writer_max_retry: float = 0.02  # seconds at most between two tries of a writer for that lock (docs/index-and-scale.md#3-a-held-lock-is-a-wait-never-a-failure)
    swap_max_retry: float = 0.1  # seconds at most between two tries of a merge's swap or a tidy for that lock (docs/index-and-scale.md#3-a-held-lock-is-a-wait-never-a-failure)

    # -- Writes ------------------------------------------------------------------------------------
    commit_gather: float = 0.03  # seconds a commit waits for a write tool between its file change and its submission, to join it (docs/concurrency.md#two-processes-on-one-vault)
    commit_spacing: float = 0.05  # seconds at least between two commits under steady saves from several callers; a lone save never waits (docs/concurrency.md#two-processes-on-one-vault)
    write_lock_wait: float = 20.0  # seconds a write tool waits for the index lock before answering a retryable error (docs/concurrency.md#limits)
    write_wait_notice: float = 30.0  # seconds after which a writer still waiting for the lock says so in the log (docs/concurrency.md#limits)
    max_title: int = 500  # characters a title may have (docs/tools.md#the-write-tools)
    max_content: int = 1_000_000  # characters a note's content may have (docs/tools.md#the-write-tools)
    max_name_bytes: int = 200  # bytes of a new file's name stem in UTF-8, leaving room for a numbered suffix under the usual 255 (docs/vault-format.md#which-files-are-memories)
    max_name_suffix: int = 10_000  # numbered suffixes tried for a free file name before giving up (docs/vault-format.md#which-files-are-memories)
    names_kept: int = 64  # folders whose file names the process keeps between creates (docs/concurrency.md#two-processes-on-one-vault)
    names_fresh: float = 5.0  # seconds a folder's listing serves its creates at most (docs/concurrency.md#two-processes-on-one-vault)
    in_use_wait: float = 1.0  # seconds a replace or delete waits for a file held open elsewhere (Windows) (docs/platforms.md#what-each-platform-does-differently-and-what-the-code-does-about-it)
    in_use_first_retry: float = 0.005  # seconds before the first retry of a replace or delete of a file held open (docs/platforms.md#what-each-platform-does-differently-and-what-the-code-does-about-it)
    in_use_max_retry: float = 0.1  # seconds at most between two retries of a replace or delete of a file held open (docs/platforms.md#what-each-platform-does-differently-and-what-the-code-does-about-it)

    # -- The runtime and the watcher ---------------------------------------------------------------
    merge_check: float = 2.0  # seconds between looks at whether a merge is due (docs/index-and-scale.md#2-merging-happens-in-the-background-one-process-at-a-time)
    first_answer_wait: float = 5.0  # seconds of a young build a first call waits for, so a small vault answers its first call complete (docs/index-and-sync.md#at-start)
    stop_grace: float = 5.0  # seconds a build still running gets to finish when the client leaves (docs/index-and-sync.md#at-start)
    check_after_at_most: float = 30.0  # seconds the start-up check waits for the server to be loaded (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    calls_first: float = 0.5  # seconds without a call in flight after which the start-up check starts, unless the first call was answered before (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    calls_first_at_most: float = 10.0  # seconds after loading at which the start-up check starts whatever the calls (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    check_apply_every: float = 0.25  # seconds at most between the start-up check finding a note changed while no server ran and committing it (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    check_give_way_every: int = 64  # files the start-up check stats between two pauses while a call is in flight (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    check_save_wait: float = 0.1  # seconds at most the walking start-up check waits, every check_give_way_every files, for the watcher to apply a save (never longer than it walked since its last wait) (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    check_give_way: float = 0.001  # seconds of each such pause, so the call's thread gets the interpreter lock (docs/index-and-sync.md#until-the-start-up-check-ends-checking)
    watch_debounce: float = 0.05  # seconds of quiet before the watcher applies the changes it saw (docs/index-and-sync.md#while-serving)
    watch_steps_wait: float = 2.0  # seconds at most the watcher waits for a write tool's file steps to end (docs/index-and-sync.md#while-serving)
    watch_max_delay: float = 0.3  # seconds after which a steady stream of changes is still applied (docs/index-and-sync.md#while-serving)
    reconcile_every: float = 60.0  # seconds between two full comparisons of the vault with the index, for events a watcher missed (docs/index-and-sync.md#while-serving)
    unwatched_check_pause: float = 1.0  # seconds at least between two checks of every note while the system will not watch the vault's folders (docs/index-and-sync.md#while-serving)
    unwatched_check_factor: float = 10.0  # while unwatched, the pause after a check is this many times its length (at most reconcile_every), so checking a large vault takes a small share of a core (docs/index-and-sync.md#while-serving)
    watch_retries: int = 3  # times the watcher applies a change whose commit failed before it leaves it to the check of every note (docs/index-and-sync.md#while-serving)
    watch_retry_pause: float = 1.0  # seconds before the watcher applies again, on its own, a change whose commit failed (docs/index-and-sync.md#while-serving)
    watch_batch: int = 2000  # changed files applied in one commit (docs/index-and-sync.md#while-serving)
    watch_wake: float = 0.5  # seconds at most the watcher's indexing thread sleeps with nothing queued before it looks again whether the check of every note is due (docs/index-and-sync.md#while-serving)
    watch_idle_poll: float = 0.05  # seconds at most between two looks of a thread waiting for the watcher to be idle or paused (each change notifies it anyway) (docs/index-and-sync.md#while-serving)
    watch_stop_wait: float = 10.0  # seconds a stopping watcher waits for its indexing thread to finish the batch it applies (docs/index-and-sync.md#while-serving)
    observer_stop_wait: float = 5.0  # seconds a stopping watcher waits for each of the file observer's threads to end (docs/index-and-sync.md#while-serving)
    merge_stop_wait: float = 10.0  # seconds a stopping server gives a background merge to end before it kills it (a merge stopped at any moment loses nothing) (docs/index-and-scale.md#2-merging-happens-in-the-background-one-process-at-a-time)
    watch_lost_said_every: float = 60.0  # seconds between two warnings that the system dropped file events (docs/index-and-sync.md#while-serving)
    watch_lookup_limit: int = 2000  # changed paths looked up one by one; above this, all fingerprints are read at once (docs/index-and-sync.md#while-serving)

    # -- Serving and HTTP --------------------------------------------------------------------------
    worker_stop_wait: float = 10.0  # seconds a worker gets to stop before it is killed (docs/concurrency.md#many-workers-on-one-port)
    delegate_connections: int = 8  # calls a worker passes to worker 1 at once; more wait for a free connection (docs/concurrency.md#many-workers-on-one-port)
    delegate_accept_pause: float = 0.5  # seconds worker 1 waits after a failed accept (no descriptor left) before the next (docs/concurrency.md#many-workers-on-one-port)
    delegate_secret_wait: float = 5.0  # seconds a new connection to worker 1 has to send the secret (docs/concurrency.md#many-workers-on-one-port)
    affinity_connect_wait: float = 10.0  # seconds a worker tries to connect to the worker holding a legacy session before the request fails (docs/concurrency.md#many-workers-on-one-port)
    log_every: float = 60.0  # seconds between two log lines about one kind of repeated event (docs/troubleshooting.md#serve)
    max_connections: int = 1000  # client connections one server process holds at once (docs/safety.md#limits)
    fd_share: int = 2  # at most 1/this of the process's file descriptors go to client connections (docs/safety.md#limits)
    header_timeout: float = 10.0  # seconds a request's line and headers may take (docs/safety.md#limits)
    max_header_bytes: int = 64 * 1024  # bytes a request's line and headers may take (docs/safety.md#limits)
    backlog_share: int = 4  # the listen backlog is at most 1/this of the connection bound, so a burst never takes the descriptors kept (docs/safety.md#limits)
    backlog: int = 2048  # the listen backlog where the bound allows it (uvicorn's default) (docs/safety.md#limits)
    keep_alive: int = 5  # seconds an idle kept-alive connection stays open (uvicorn's default) (docs/safety.md#limits)
    max_sessions_per_caller: int = 100  # legacy sessions of one caller in one process; at the bound the least recently used idle one ends (docs/safety.md#limits)
    max_sessions: int = 10_000  # all callers' legacy sessions in one process (the SDK's own bound) (docs/safety.md#limits)
    session_idle: int = 30 * 60  # seconds a legacy session without a request lives (the SDK's default) (docs/safety.md#limits)
    resource_page: int = 500  # notes listed per page of the MCP resources (docs/tools.md#rules-every-tool-follows)
    call_threads: int = 3  # tool calls one process runs at once; the calls share one interpreter lock (docs/concurrency.md#many-workers-on-one-port)
    max_globs: int = 100  # folder patterns one agent key may list (docs/sharing.md#keys)
    keys_lock_wait: float = 10.0  # seconds an `agents add` waits for another one to finish (docs/sharing.md#keys)
    keys_lock_stale: float = 60.0  # seconds after which a keys lock was left by a process that died (docs/sharing.md#keys)
    keys_lock_poll: float = 0.05  # seconds between tries while another `agents` command holds the keys lock (docs/sharing.md#keys)

    # -- History: the journal and the agents' states -----------------------------------------------
    state_max_read: int = 5_000  # notes an agent's state remembers as read; the oldest are forgotten first (docs/sharing.md#what-an-agent-may-read-and-write)
    state_max_wrote: int = 2_000  # notes an agent's state watches for being lost (docs/sharing.md#what-an-agent-may-read-and-write)
    state_max_errors: int = 20  # recent errors an agent's state keeps (docs/sharing.md#what-an-agent-may-read-and-write)
    state_rewrite_slack: int = 4096  # bytes of changes always allowed past a state's own size before it is rewritten (docs/sharing.md#what-an-agent-may-read-and-write)
    file_lock_poll: float = 0.002  # seconds between tries while another process holds a journal or state lock (docs/concurrency.md#two-processes-on-one-vault)
    journal_max_age_days: int = 30  # days the journal keeps a change (docs/sharing.md#what-an-agent-did-and-undo)
    journal_max_entries: int = 20_000  # changes the journal keeps of each agent (docs/sharing.md#what-an-agent-did-and-undo)
    journal_max_bytes: int = 64 * 1024 * 1024  # bytes of earlier contents the journal keeps of each agent (docs/sharing.md#what-an-agent-did-and-undo)
    journal_total_entries: int = 100_000  # changes the journal keeps of all agents together (docs/sharing.md#what-an-agent-did-and-undo)
    journal_total_bytes: int = 512 * 1024 * 1024  # bytes of earlier contents kept of all agents together (docs/sharing.md#what-an-agent-did-and-undo)
    journal_look_after: int = 16  # a process looks at the limits once it recorded this fraction (1/n) of an agent's share (docs/sharing.md#what-an-agent-did-and-undo)
    journal_prune_every: float = 60.0  # seconds between looks at the journal's limits in one process (docs/sharing.md#what-an-agent-did-and-undo)
    journal_prune_to: float = 0.9  # share of each limit a prune keeps, so the next prune is far away (docs/sharing.md#what-an-agent-did-and-undo)

    # -- Reads and answers -------------------------------------------------------------------------
    suggestions: int = 3  # closest words offered per unknown word (docs/tools.md#hints-on-a-miss)
    max_note_bytes: int = 2 * 1024 * 1024  # bytes of a note file that are read; a larger file is reported, not read (docs/safety.md#limits)
    read_chunk: int = 1 << 20  # bytes read from a note file at a time (docs/safety.md#limits)
    yaml_node_budget: int = 100_000  # YAML nodes a frontmatter may build, so a crafted file cannot exhaust memory (docs/safety.md#limits)
    yaml_string_unit: int = 64  # characters of a YAML string that cost one node of the budget (docs/safety.md#limits)
    yaml_max_depth: int = 64  # nesting depth a frontmatter may have (docs/safety.md#limits)
    settled_ns: int = 2_000_000_000  # nanoseconds unchanged after which a file's mtime tells any later change (docs/index-and-sync.md#while-serving)
    max_answer_chars: int = 40_000  # characters of JSON no answer passes (docs/tools.md#rules-every-tool-follows)
    row_budget: int = 36_000  # characters the rows of a list answer may take, leaving room for the envelope (docs/tools.md#rules-every-tool-follows)
    inbox_shown: int = 5  # inbox entries shown in one answer (docs/sharing.md#handoffs-and-the-inbox)
    inbox_excerpt: int = 160  # characters of a handoff's body shown in the inbox (docs/sharing.md#handoffs-and-the-inbox)
    shown_ref_chars: int = 100  # characters of a ref echoed in a message (docs/tools.md#hints-on-a-miss)
    chunk_chars: int = 2000  # characters of a chunk mem_recall returns (docs/tools.md#mem_recall)
    conflicts_shown: int = 5  # conflicting notes named in one answer (docs/tools.md#rules-every-tool-follows)
    excerpt_chars: int = 160  # characters of an excerpt (docs/tools.md#rules-every-tool-follows)
    excerpt_snap: int = 16  # characters a cut may move to land between words instead of inside one (docs/tools.md#rules-every-tool-follows)
    default_history: int = 5  # commits memory_read's history shows when none is asked (docs/tools.md#memory_read)
    max_history: int = 50  # commits memory_read's history shows at most (docs/tools.md#memory_read)
    chain_limit: int = 5000  # notes in a supersede chain past which it is walked on the whole graph instead (docs/tools.md#memory_list)
    miss_text_checks: int = 500  # query matches whose text a miss re-checks for a query with non-word characters (docs/tools.md#hints-on-a-miss)
    miss_record_checks: int = 5_000  # notes up to which a miss checks metadata on every record (docs/tools.md#hints-on-a-miss)
    compact_chars: int = 400  # characters of a note in mem_recall's compact text (docs/tools.md#mem_recall)
    hidden_count_cap: int = 200  # archive notes chunked for the hint; past this only notes are counted (docs/tools.md#mem_recall)
    search_default_limit: int = 10  # results memory_search returns when no limit is asked (docs/tools.md#memory_search)
    search_max_limit: int = 50  # results memory_search returns at most (docs/tools.md#memory_search)
    search_older_shown: int = 5  # permalinks of older versions a folded search row names; older_count says how many (docs/ranking.md#the-current-version-first)
    digest_title_chars: int = 300  # characters of a digest's title before it is cut (and marked) (docs/tools.md#memory_search)
    digest_list_budget: int = 1_000  # characters of JSON a digest's tags or paths may take (docs/tools.md#memory_search)
    hint_echo: int = 40  # characters of a caller's value a hint repeats (docs/tools.md#hints-on-a-miss)
    hint_max_words: int = 3  # words or tags that get "did you mean" suggestions in one answer (docs/tools.md#hints-on-a-miss)
    hint_max_listed: int = 5  # values named in one hint (docs/tools.md#hints-on-a-miss)
    read_default_chars: int = 20_000  # characters of a body memory_read returns when no max_chars is asked (docs/tools.md#memory_read)
    read_max_chars: int = 30_000  # characters of a body memory_read returns at most (docs/tools.md#memory_read)
    read_head_budget: int = 24_000  # characters of JSON the record without its body may take (docs/tools.md#memory_read)
    read_envelope: int = 600  # room for next_offset, the message and JSON punctuation (docs/tools.md#memory_read)
    domain_page: int = 500  # domains listed per page (docs/tools.md#list_domains)
    snippet_chars: int = 400  # characters of a row's snippet (docs/tools.md#rules-every-tool-follows)
    row_fields_budget: int = 8_000  # characters of JSON a list row may take besides its content (docs/tools.md#rules-every-tool-follows)

    recall_chunks_kept: int = 256  # notes whose mem_recall chunks a process keeps (docs/tools.md#mem_recall)
    recall_counts_kept: int = 50_000  # notes whose chunk count a process keeps, so paging need not chunk every earlier note again (docs/tools.md#mem_recall)
    param_max_chars: int = 10_000  # characters a string parameter may have where its tool names no other bound (docs/tools.md#rules-every-tool-follows)
    param_max_items: int = 1_000  # strings a list parameter may hold where its tool names no other bound (docs/tools.md#rules-every-tool-follows)

    # -- Notes that say nearly the same (search/similar.py: memory_write's similar, vault-mem tidy) -
    similar_shown: int = 3  # notes memory_write's and memory_supersede's `similar` lists at most; 0 looks for none (VAULT_MEM_SIMILAR) (docs/tools.md#memory_write)
    similar_threshold: float = 0.25  # resemblance (0..1) from which two notes whose facts agree are listed as saying the same; tidy's default --threshold (docs/ranking.md#notes-that-say-the-same)
    similar_terms: int = 8  # rarest words of a text searched to find the notes it is compared with (docs/tools.md#memory_write)
    similar_candidates: int = 10  # notes found by those words that are compared with the text (docs/tools.md#memory_write)
    similar_min_words: int = 8  # distinct words a text needs to be compared at all: in fewer, any two look alike (docs/tools.md#memory_write)
    similar_rarity_words: int = 50_000  # words whose document frequency one comparison (or a whole tidy) keeps (docs/tools.md#memory_write)
    similar_link_share: float = 0.5  # share of a note's lines holding a link from which it is compared by its link targets (docs/ranking.md#notes-that-say-the-same)
    similar_min_links: int = 3  # link targets a note that is mostly links needs to be compared at all (docs/ranking.md#notes-that-say-the-same)
    tidy_neighbours: int = 8  # notes resembling one note that tidy joins into its cluster (docs/cli.md#vault-mem-tidy)
    tidy_view_notes: int = 500  # notes tidy compares through one view before a fresh one lets go of the records read (docs/cli.md#vault-mem-tidy)
    tidy_view_clusters: int = 200  # clusters tidy orders through one view (docs/cli.md#vault-mem-tidy)

    # -- Finding by meaning (vault_mem/meaning/, search/fusion.py) ----------------------------------
    meaning_depth: int = 30  # notes of the keyword order, and notes nearest by meaning, that the fusion ranks (docs/ranking.md#by-meaning-optional)
    meaning_words_weight: float = 1.0  # weight of a candidate's words (ln(1 + its keyword score without the all-terms bonuses), z-scored over the candidates) in the fused score (docs/ranking.md#by-meaning-optional)
    meaning_weight: float = 1.5  # weight of a candidate's similarity to the query (z-scored over the candidates) in the fused score (docs/ranking.md#by-meaning-optional)
    meaning_exact_first: int = 3  # when at most this many candidates hold every query term exactly, they come first whatever their meaning: rare words win (docs/ranking.md#by-meaning-optional)
    meaning_min_similarity: float = 0.25  # cosine similarity below which a note is not near a query by meaning (docs/ranking.md#by-meaning-optional)
    meaning_chunk_chars: int = 1_000  # characters of a note embedded as one chunk; a longer note is cut at its headings (docs/ranking.md#by-meaning-optional)
    meaning_max_chunks: int = 8  # chunks of one note embedded at most; the rest of a huge note is only indexed by its words (docs/ranking.md#by-meaning-optional)
    meaning_batch_notes: int = 16  # notes embedded and stored together; a stop loses at most one batch (docs/ranking.md#by-meaning-optional)
    meaning_batch_tokens: int = 4_096  # word pieces the model runs in one batch, about (docs/ranking.md#by-meaning-optional)
    meaning_idle: float = 2.0  # seconds between two looks of the embedder at whether the index moved (docs/ranking.md#by-meaning-optional)
    meaning_stop_wait: float = 10.0  # seconds the embedder gets to end its batch when the server stops (docs/ranking.md#by-meaning-optional)
    meaning_query_bits: int = 8  # 8: onnxruntime embeds a query with the weights kept in 8 bits, fewer bytes to read, a vector near the full one; 32: at full precision, as notes are (VAULT_MEM_QUERY_BITS) (docs/ranking.md#by-meaning-optional)
    meaning_query_agreement: float = 0.95  # cosine, on a few texts at load, below which the 8-bit query vectors are not used: queries are then embedded at full precision (docs/ranking.md#by-meaning-optional)
    meaning_query_cache: int = 256  # queries whose vectors a process keeps: an agent often repeats one (docs/ranking.md#by-meaning-optional)
    meaning_weights_bytes: int = 8 * 1024 * 1024 * 1024  # bytes a model's weights file may hold; they are read into memory whole, so a larger one is refused (docs/ranking.md#by-meaning-optional)
    meaning_json_bytes: int = 64 * 1024 * 1024  # bytes a JSON file of a model folder (its config, its tokenizer) may hold; a larger one is refused (docs/ranking.md#by-meaning-optional)
    meaning_pull_timeout: float = 60.0  # seconds `vault-mem meaning pull` waits for the hub's answer to one request (docs/cli.md#vault-mem-meaning)

    # -- Imports -----------------------------------------------------------------------------------
    import_writers: int = 8  # creates in flight at once during an import (docs/import.md#speed)
    import_batch: int = 256  # creates queued before waiting for them, so memory stays bounded and the progress honest (docs/import.md#speed)
    import_title_chars: int = 80  # characters of a record's first line that title an imported note without a title (docs/import.md#the-jsonl-form)
    import_unpacked_bytes: int = 1024 * 1024 * 1024  # bytes one file of an export archive (a zip entry, a gzip) may unpack to; a larger one is refused, so a small hostile file cannot fill memory (docs/import.md#openmemory)

    # -- Git ---------------------------------------------------------------------------------------
    git_timeout: float = 60.0  # seconds a local git command may take (docs/git.md#good-to-know)
    git_network_timeout: float = 300.0  # seconds a git fetch or push may take (docs/git.md#good-to-know)
    sync_rounds: int = 3  # fetch-and-push rounds a sync tries when the remote moved meanwhile (docs/git.md#what-vault-mem-sync-does)
    sync_stop_wait: float = 30.0  # seconds the server's periodic sync gets to end its round when the server stops (docs/git.md#what-vault-mem-sync-does)
    git_probe_timeout: float = 15.0  # seconds git may take to say whether the vault is inside a work tree (docs/git.md#good-to-know)
    git_history_timeout: float = 600.0  # seconds one `git log` over the vault's history may take when the index follows git (docs/git.md#the-index-follows-git)
    git_commit_attempts: int = 3  # tries of a commit when another git process holds the repository's lock (docs/git.md#agents-writes-as-commits-serve---git-commit)
    history_max_commits: int = 50  # commits kept per note, the most memory_read's history asks for (docs/git.md#the-index-follows-git)
    history_save_after: int = 50  # new commits replayed before the saved history map is rewritten (docs/git.md#the-index-follows-git)

    # -- The page for people (vault_mem/ui/) -------------------------------------------------------
    ui_login_ttl: float = 15 * 60  # seconds a one-time login link stays good (docs/ui.md#logging-in)
    ui_session_ttl: float = 12 * 3600  # seconds a page session lasts (docs/ui.md#logging-in)
    ui_login_free: int = 5  # wrong logins from one client address before its next try waits (docs/ui.md#logging-in)
    ui_login_free_all: int = 20  # wrong logins from all addresses together before every next try waits (docs/ui.md#logging-in)
    ui_login_first_wait: float = 1.0  # seconds the first wait lasts; each further wrong login doubles it (docs/ui.md#logging-in)
    ui_login_longest_wait: float = 60.0  # seconds a wait after wrong logins lasts at most (docs/ui.md#logging-in)
    ui_login_forget: float = 15 * 60  # seconds without a wrong login after which the earlier ones are forgotten (docs/ui.md#logging-in)
    ui_login_addresses: int = 10_000  # client addresses whose wrong logins are remembered at most (docs/ui.md#logging-in)
    ui_max_body: int = 64 * 1024  # bytes a request to the page may send (docs/ui.md#safe-by-construction)
    ui_activity_page: int = 100  # changes per page of Activity (docs/ui.md#activity)
    ui_max_diff_lines: int = 600  # diff lines shown of one change; more are counted, not shown (docs/ui.md#activity)
    ui_max_diff_side: int = 2_000_000  # bytes of each version a diff compares at most (docs/ui.md#activity)

    # -- The command line --------------------------------------------------------------------------
    many_files: int = 50_000  # Markdown files in a folder without .obsidian that make it look unlikely to be a vault (docs/troubleshooting.md#the-vault)
    import_shown: int = 20  # conflicts and skipped lines listed for a person; --json lists them all (docs/import.md#moving-in-import-and-export)
    cli_history_default: int = 20  # commits `vault-mem history` shows when no --limit is given (docs/cli.md#vault-mem-history)
    max_workers: int = 64  # most processes `serve --workers` starts (docs/concurrency.md#many-workers-on-one-port)
    client_config_bytes: int = 64 * 1024 * 1024  # bytes of a client's config file connect reads at most; a larger one is left as it is (docs/clients.md#in-one-command-connect)
    client_config_depth: int = 100  # nesting depth of a client's config file connect rewrites; a deeper one is left as it is (docs/clients.md#in-one-command-connect)
    claude_cli_timeout: float = 60.0  # seconds the `claude` command may take when connect registers the server with it (docs/clients.md#claude-code)

    # -- Process-wide tuning (vault_mem/runtime/tuning.py) -----------------------------------------
    tune_gc: bool = True  # freeze what the server loaded and collect the rest in steps, off the calls' way (docs/settings.md#the-garbage-collector)
    tune_serving_nice: bool = True  # serving workers run at a lower priority than worker 1, which makes the writes (docs/settings.md#serving-workers-give-way-to-the-writer)
    tune_switch_interval: bool = True  # worker 1 hands the interpreter lock over sooner, so a write's thread runs soon (docs/settings.md#worker-1-takes-writes-quickly)
    tune_merge_priority: bool = True  # a background merge runs at a low priority in its own scheduling group (docs/settings.md#merges-run-at-a-low-priority)
    merge_nice: int = 10  # how much lower a background merge's priority is (docs/settings.md#merges-run-at-a-low-priority)
    gc_freeze_every: float = 1.0  # seconds between freezes of what survived the young collections (docs/settings.md#the-garbage-collector)
    gc_full_every: float = 600.0  # seconds of steady load after which a full collection runs anyway (docs/settings.md#the-garbage-collector)
    gc_growth_share: float = 0.5  # objects frozen since the last full collection, to those it left, that make the next one due (docs/settings.md#the-garbage-collector)
    gc_growth_floor: int = 200_000  # objects frozen since the last full collection that make one due however few live (docs/settings.md#the-garbage-collector)
    gc_idle_growth: int = 20_000  # objects frozen since the last full collection that an idle tick collects (docs/settings.md#the-garbage-collector)
    gc_idle_every: float = 60.0  # seconds at least between two full collections at idle ticks (docs/settings.md#the-garbage-collector)
    gc_young: int = 20_000  # allocations between two young collections once the server is ready (docs/settings.md#the-garbage-collector)
    serving_nice: int = 3  # how much lower the serving workers' priority is than worker 1's (docs/settings.md#serving-workers-give-way-to-the-writer)
    writer_switch_interval: float = 0.0005  # worker 1's interpreter switch interval in seconds, so a write's thread gets the lock soon (docs/settings.md#worker-1-takes-writes-quickly)

_current = Settings()


def current() -> Settings:
    """The process's settings: what ``configure`` or ``use`` set, else the defaults."""
    return _current


def configure(chosen: Settings) -> None:
    """Set the process's settings; a composition root (the command line, a child process's entry)
    calls it once, before it reads ``current()`` and builds what it serves."""
    global _current
    _current = chosen


@contextmanager
def use(chosen: Settings) -> Iterator[Settings]:
    """``chosen`` as the process's settings until the block ends, then the ones before (tests,
    embedding). Process-wide, not per thread: threads started meanwhile see them too."""
    global _current
    before = _current
    _current = chosen
    try:
        yield chosen
    finally:
        _current = before


def _number(environ: Mapping[str, str], name: str, accepted: str, low: float) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= low or value == float("inf"):
        raise InvalidInput(name, f"{name}={raw!r} is not {accepted}")
    return value


def _switch(environ: Mapping[str, str], name: str) -> bool | None:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "on", "yes", "true"):
        return True
    if raw in ("0", "off", "no", "false"):
        return False
    raise InvalidInput(name, f"{name}={raw!r} is not a switch: accepted are on/off, 1/0, yes/no, true/false")


# The settings a person tunes by environment (docs/settings.md#by-environment).
ENVIRONMENT = ("VAULT_MEM_CACHE_MB", "VAULT_MEM_GC_TUNING", "VAULT_MEM_PRIORITIES")


def from_environment(environ: Mapping[str, str], base: Settings | None = None) -> Settings:
    """``base`` (else the defaults) with what the environment sets (docs/settings.md); a value
    that is not accepted raises ``InvalidInput`` naming the variable and what it takes."""
    chosen = base or Settings()
    changes: dict[str, object] = {}
    megabytes = _number(environ, "VAULT_MEM_CACHE_MB", "a number of megabytes (a number under 1 counts as 1)",
                        float("-inf"))
    if megabytes is not None:
        changes["cache_mb"] = max(megabytes, 1)
    shown = _number(environ, "VAULT_MEM_SIMILAR", "a whole number of notes (0: look for none)", 0)
    if shown is not None:
        if shown != int(shown):
            raise InvalidInput("VAULT_MEM_SIMILAR", f"VAULT_MEM_SIMILAR={environ['VAULT_MEM_SIMILAR'].strip()!r} is not "
                                                    "a whole number of notes (0: look for none)")
        changes["similar_shown"] = int(shown)
    bits = environ.get("VAULT_MEM_QUERY_BITS", "").strip()
    if bits:
        if bits not in ("8", "32"):
            raise InvalidInput("VAULT_MEM_QUERY_BITS", f"VAULT_MEM_QUERY_BITS={bits!r} is not 8 or 32")
        changes["meaning_query_bits"] = int(bits)
    collector = _switch(environ, "VAULT_MEM_GC_TUNING")
    if collector is not None:
        changes["tune_gc"] = collector
    priorities = _switch(environ, "VAULT_MEM_PRIORITIES")
    if priorities is not None:
        changes["tune_serving_nice"] = changes["tune_merge_priority"] = priorities
    return dataclasses.replace(chosen, **changes) if changes else chosen  # type: ignore[arg-type]
