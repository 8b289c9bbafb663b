"""One tool call, from its arguments to its answer dict, in the vault it names (docs/vaults.md).

``Calls`` is a server's call path: it picks the vault a call names (``vault``, a permalink
``memory://NAME/...`` in its ref, else the default one), checks that the caller reaches it
(``served/vaults.py:Reach``: a vault it does not reach answers exactly as one that is not
served), and runs the call there with the caller's limits in that vault (``call``). With
several vaults served, ``list_domains`` also lists the vaults, ``memory_search`` with
``vault: "*"`` spans every vault the caller may read and its ``inbox`` every vault it reaches
(``spanning.py``). With one vault every answer is what it was before vaults had names."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import mcp.types as t

from vault_mem.errors import Forbidden, InternalError, InvalidInput, VaultMemError, VaultUnavailable
from vault_mem.mcp_server import spanning
from vault_mem.mcp_server.answers import answer_text, error_answer, text_result
from vault_mem.mcp_server.tools import ToolSpec, tools_for
from vault_mem.reads.conflicts import conflict_hint
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, view_of
from vault_mem.served.mailbox import annotate, caller_name
from vault_mem.served.vaults import EVERY, Reach, Served
from vault_mem.writes.across import supersede_across

log = logging.getLogger("vault_mem.mcp_server")


def call(vault: Vault, spec: ToolSpec, arguments: dict[str, Any] | None, caller: Agent | None = None,
         read_only: bool = False, *, others: frozenset[str] = frozenset(),
         old: tuple[Vault, Agent | None, frozenset[str]] | None = None) -> dict[str, Any]:
    """Run one tool call by ``caller`` (None: unlimited) to an answer dict. Never raises.
    ``others``: the other served vaults the caller reaches; ``old``: memory_supersede whose old
    note is in another vault (that vault, the caller there, the others it reaches from there)."""
    try:
        raw = dict(arguments or {})
        for theirs, ours in spec.arg_map:
            if ours in raw:  # our name is not a parameter of the compat tool: do not take it silently
                return error_answer(InvalidInput(ours, f"unknown parameter {ours!r}; accepted: "
                                                 f"{', '.join(spec.names)}"))
            if theirs in raw:
                raw[ours] = raw.pop(theirs)
        _admit(spec, raw, caller, read_only)
        if old is not None:  # the caller's rules in the old note's vault too, before anything is written
            _admit(spec, dict(raw), old[1], read_only)
            old[0].check()
        handler = spec.handler
        agent = caller_name(caller, raw)
        started = time.time()
        vault.check()  # may wait for a first build: not yet a call in flight (the check waits for those)
        try:
            with vault.answering(), view_of(vault, caller, others) as view:
                if old is None:
                    answer = handler(view, raw)
                else:
                    with old[0].answering(), view_of(*old) as old_view:
                        answer = supersede_across(view, old_view, raw)
                annotate(view, spec.name, agent, answer, started)  # inbox, lost, persist_error (served/mailbox.py)
                conflicts = conflict_hint(view) if answer.get("status") in ("ok", "none") else None
                if conflicts:
                    hints = answer.setdefault("hints", [])
                    if isinstance(hints, list):
                        hints.append(conflicts)
        except Exception as exc:
            # While a build replaces the index, reads may find it half there: say so, not fail.
            if vault.indexing() is None or (isinstance(exc, VaultMemError) and not isinstance(exc, VaultUnavailable)):
                raise
            answer = {"status": "none", "message": "the index is being built; try again shortly"}
        return _with_progress(vault, answer)
    except VaultMemError as exc:
        # A ref not found (or any other answer) during a build must say the index is incomplete.
        return _with_progress(vault, error_answer(exc, {ours: theirs for theirs, ours in spec.arg_map}))
    except Exception as exc:  # the server must answer, whatever a query module did
        log.exception("tool %s failed", spec.name)
        return error_answer(InternalError(f"internal error in {spec.name}: {type(exc).__name__}"))


def _admit(spec: ToolSpec, raw: dict[str, Any], caller: Agent | None, read_only: bool) -> None:
    """Forbidden when this server or caller may not make the call: a write on a read-only server
    or by a read-only agent, or another agent's name. An agent's own name is filled in."""
    if read_only and not spec.read_only:
        raise Forbidden(f"{spec.name} is not served: this server runs with --read-only", rule="read-only")
    if caller is None:
        return
    if not spec.read_only:
        caller.check_writes(spec.name)
    if "agent" in spec.names:
        caller.check_name(raw.get("agent"))
        raw.setdefault("agent", caller.name)


def _with_progress(vault: Vault, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with ``indexing`` and a hint while a build runs, or ``checking`` and a hint while
    the start-up check is due or running: until it ends, any answer (a ref not found included) may
    only reflect part of the vault (docs/index-and-sync.md)."""
    embedding = vault.meaning.progress() if vault.meaning is not None else None
    if embedding is not None:  # ranked by what is embedded so far (docs/ranking.md, "By meaning")
        answer["meaning"] = embedding
    progress = vault.indexing()
    if progress is not None:
        answer["indexing"] = progress
        hint = (f"the index is still being built ({progress['done']} of {progress['total']} "
                "notes): answers may be incomplete")
    elif (checked := vault.checking()) is not None:
        answer["checking"] = checked
        hint = (f"the start-up check is comparing the index with the files ({checked['done']} of "
                f"{checked['total']}): notes changed while no server ran may be missing until it ends")
    else:
        return answer
    hints = answer.setdefault("hints", [])
    if isinstance(hints, list):
        hints.append(hint)
    return answer


class Calls:
    """Tool calls of one server, run in its call threads (at most ``call_threads`` at once):
    ``served`` (one ``Vault`` is served alone) by name."""

    def __init__(self, vault: Vault | Served, read_only: bool = False) -> None:
        self.served = vault if isinstance(vault, Served) else Served.one(vault)
        self.vault = self.served.primary  # the default vault
        self.config = self.vault.index.config
        self.read_only = read_only
        self.specs = {spec.name: spec for spec in tools_for(self.vault.compat, meaning=self.vault.meaning is not None)}
        self._limiter: anyio.CapacityLimiter | None = None  # made on first use, inside the event loop

    async def run(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None,
                  reach: Reach | None = None) -> t.CallToolResult:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.config.call_threads)
        # The result is made in the call thread too: the event loop, which every request of this
        # worker passes through (writes on their way to worker 1 as well), does no more than it must.
        return await anyio.to_thread.run_sync(self.result, name, arguments, caller, reach, limiter=self._limiter)

    def result(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None,
               reach: Reach | None = None) -> t.CallToolResult:
        return text_result(self.text(name, arguments, caller, reach))

    def text(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None,
             reach: Reach | None = None) -> str:
        """The call's answer as its text block (``answers.answer_text``)."""
        return answer_text(name, self.answer(name, arguments, caller, reach), self.config.max_answer_chars)

    def answer(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None,
               reach: Reach | None = None) -> dict[str, Any]:
        """The call run in this thread (worker 1 runs the others' write calls so: mcp_server/delegate.py).
        ``reach``: the vaults the request reaches, with its caller in each (None: ``caller`` in every
        served vault)."""
        spec = self.specs.get(name)
        if spec is None:
            return error_answer(InvalidInput("name", f"unknown tool {name!r}; tools: {', '.join(self.specs)}"))
        reach = self.served.everywhere(caller) if reach is None else reach
        raw = dict(arguments or {})
        try:
            target, old_in = self._target(spec, raw, reach)
        except VaultMemError as exc:
            return error_answer(exc, {ours: theirs for theirs, ours in spec.arg_map})
        served = self.served
        if target == EVERY:  # memory_search in every vault the caller may read
            return spanning.search_everywhere(served, reach, raw, self._runner(spec, reach), self.config)
        old = (served.vaults[old_in], reach[old_in], self._others(old_in, reach)) if old_in is not None else None
        answer = call(served.vaults[target], spec, raw, reach[target], self.read_only,
                      others=self._others(target, reach), old=old)
        if served.several and answer.get("status") in ("ok", "none"):
            if spec.name == "list_domains":
                answer["vaults"] = spanning.vault_counts(served, reach)
            if "inbox" in answer:  # handed to it in any vault it reaches
                spanning.inbox_everywhere(served, reach, raw, answer, self.config)
        return answer

    def _runner(self, spec: ToolSpec, reach: Reach) -> spanning.RunIn:
        """A call in one vault of ``reach``, its lineage edges to the others it reaches kept as written."""
        return lambda name, raw, caller: call(self.served.vaults[name], spec, raw, caller, self.read_only,
                                              others=self._others(name, reach))

    def _others(self, name: str, reach: Reach | None) -> frozenset[str]:
        """The served vaults but ``name`` that ``reach`` includes (None: none; one vault: none)."""
        if reach is None or not self.served.several:
            return frozenset()
        return frozenset(other for other in self.served.reachable(reach) if other != name)

    def _target(self, spec: ToolSpec, raw: dict[str, Any], reach: Reach) -> tuple[str, str | None]:
        """The name of the vault the call runs in (``EVERY``: memory_search spanning every vault),
        its ``vault`` taken out of ``raw`` (a ref ``memory://NAME/...`` goes to NAME, and keeps its
        name: served/refs.py reads it in that vault); and, for
        memory_supersede whose ref names another vault than ``vault``, that vault (the old note's).
        InvalidInput for a vault the caller cannot use, ``*`` where one vault is needed, or (any
        other tool) a ref naming another vault than ``vault``."""
        served = self.served
        given = raw.pop("vault", None)
        target = served.chosen(given, reach)
        if target == EVERY:
            names = ", ".join(repr(n) for n in served.reachable(reach))
            if not spec.read_only:
                raise InvalidInput("vault", f"'{EVERY}' (every vault) does not name where to write: give one "
                                            f"vault's name; vaults: {names}")
            if spec.name != "memory_search" and served.several:
                raise InvalidInput("vault", f"'{EVERY}' (every vault) is taken by memory_search only: give one "
                                            f"vault's name; vaults: {names}")
            if not served.several:
                target = served.chosen(None, reach)
        ref_param = next((theirs for theirs, ours in spec.arg_map if ours == "ref"), "ref")
        ref = raw.get(ref_param)
        ref = ref.strip() if isinstance(ref, str) and ref_param in spec.names else ""
        named = served.named_in(ref, reach) if ref else None
        if named is None:
            return target, None
        in_vault, _rest = named  # the ref keeps its vault's name: read there, it names the note (served/refs.py)
        if given is None or in_vault == target:
            return in_vault, None
        if spec.name == "memory_supersede":  # the new note in vault, the old one where it is
            return target, in_vault
        raise InvalidInput(ref_param, f"{ref[:200]!r} is a note of the vault {in_vault!r}, but vault "
                                      f"is {target!r}: leave out vault, or give {in_vault!r}")


