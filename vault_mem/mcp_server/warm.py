"""The first calls after a start as fast as the next ones: a few read queries run once the index
is ready, their answers thrown away.

What a call computes from the index and keeps (each segment's columns, the listing orders, the
folders of ``list_domains``, a search's per-segment tables) is shared by every call thread of
the process (``search/lru.py``) but made by whichever call needs it first, so the first calls
of each read tool were several times slower than the next ones; after these queries, run in the
background, most of what is left is the words of the first search itself
(docs/perf/warm-start.md).

Only read tools run, with no caller and no agent's state touched: the handlers themselves, not
``app.call``, which adds an agent's inbox and marks (``served/mailbox.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.served.context import Vault, view_of

log = logging.getLogger("vault_mem.mcp_server")
WARM_AGENT = "vault-mem"  # a name memory_search checks; nothing is kept for it
WARM_WORD = "memory"
WARM_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("memory_search", {"agent": WARM_AGENT, "query": WARM_WORD}),
    ("memory_search", {"agent": WARM_AGENT}),
    ("memory_list", {"query": WARM_WORD, "limit": 10}),
    ("memory_list", {"tags_any": [WARM_WORD], "sort_by_importance": True, "limit": 10}),
    ("memory_list", {"limit": 10}),
    ("mem_recall", {"since": "2000-01"}),
    ("list_domains", {}),
)


def warm_up(vault: Vault) -> int:
    """Run ``WARM_CALLS`` in this thread; returns how many answered. Never raises: a query that
    fails here fails again, with its message, when a client asks it."""
    done = 0
    for name, args in WARM_CALLS:
        try:
            with view_of(vault) as view:
                TOOLS_BY_NAME[name].handler(view, dict(args))
            done += 1
        except Exception as exc:  # a warm-up is worth nothing next to serving
            log.debug("warming up with %s: %s", name, exc)
    return done


def warm_when_ready(vault: Vault, wait_ready: Callable[[], object]) -> threading.Thread:
    """``warm_up`` in a background thread once ``wait_ready()`` returns (the first build or the
    check against the files is over): calls are answered meanwhile."""
    def run() -> None:
        wait_ready()
        warm_up(vault)

    thread = threading.Thread(target=run, name="vault-mem-warm-up", daemon=True)
    thread.start()
    return thread
