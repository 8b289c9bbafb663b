"""The steady writers ``write_bench.py --threads`` and ``two_servers_bench.py`` share: threads
writing new notes and appending to their own through the server's call path
(``vault_mem.mcp_server.app.call``), without the MCP transport.

Nothing here changes ``sys.path`` or imports vault_mem before it is called, so a bench run with
``PYTHONPATH=<checkout>`` measures that checkout.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vault_mem.served.context import Vault


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_steadily(vault: Vault, threads: int, seconds: float, agent: str, title: str, domains: Sequence[str],
                   tags: Sequence[str] = ()) -> tuple[list[float], list[str]]:
    """``threads`` threads writing for ``seconds``, as ``agent``: half new notes (titled ``title``
    and the thread's and call's numbers, in one of ``domains``), half appends to their own. Returns
    each call's milliseconds and the failures' messages."""
    from vault_mem.mcp_server.app import call
    from vault_mem.mcp_server.tools import tools_for

    specs = {spec.name: spec for spec in tools_for(False)}
    times: list[float] = []
    failures: list[str] = []
    deadline = time.monotonic() + seconds

    def writer(n: int) -> None:
        rng = random.Random(f"{agent}{n}")
        mine: list[str] = []
        i = 0
        while time.monotonic() < deadline:
            i += 1
            args: dict[str, Any]
            if mine and rng.random() < 0.5:
                tool, args = "memory_edit", {"agent": agent, "ref": rng.choice(mine), "append": f"More {n} {i}."}
            else:
                tool, args = "memory_write", {"agent": agent, "title": f"{title} {n} {i}", "content": f"By {n}: {i}.",
                                              "domain": rng.choice(domains)}
                if tags:
                    args["tags"] = list(tags)
            started = time.perf_counter()
            answer = call(vault, specs[tool], args)
            times.append((time.perf_counter() - started) * 1000)
            if answer.get("status") != "ok":
                failures.append(f"{tool}: {answer.get('message')}")
            elif tool == "memory_write":
                mine.append(str(answer["uid"]))

    pool = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return times, failures
