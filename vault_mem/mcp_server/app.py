"""The MCP server: the low-level SDK server with our own tool listing and call path, so
that every argument is validated by the query layer (the SDK's lenient validation would
drop unknown names silently and answer bad types with a protocol-level error).

Every call carries its caller (``served/agents.py``): over HTTP the agent whose key the
request sent, which the transport's middleware puts in the ASGI scope under ``CALLER``
(the SDK hands each handler that request, in the 2026-07-28 stateless protocol and in
legacy sessions alike); over stdio the server's own (``serve --agent``); None for the
shared token or an unlimited client. A read-only server (``serve --read-only``) lists no
write tools, nor does it list them to a read-only agent. Every answer to a call that names an
agent (its caller, else its ``agent`` argument) gets that agent's ``inbox``, ``lost`` and
``persist_error`` (``served/mailbox.py``)."""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import unquote

import anyio
import mcp.types as t
from mcp.server.apps import EXTENSION_ID, client_supports_apps
from mcp.server.lowlevel import Server

from vault_mem import __version__
from vault_mem.errors import Forbidden, InternalError, InvalidInput, NotFound, VaultMemError, VaultUnavailable
from vault_mem.mcp_server.answers import answer_text, error_answer, text_result
from vault_mem.mcp_server.delegate import Delegate
from vault_mem.mcp_server.outputs import output_schema
from vault_mem.mcp_server.tools import ToolSpec, tools_for
from vault_mem.reads.conflicts import conflict_hint
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, View, view_of
from vault_mem.served.mailbox import annotate, caller_name
from vault_mem.served.refs import no_note, resolve_ref
from vault_mem.ui import mcp_app
from vault_mem.vault.note import resource_uri

log = logging.getLogger("vault_mem.mcp_server")
CALLER = "vault_mem.caller"  # the ASGI scope key of an HTTP request's agent (transports.py)

INSTRUCTIONS = (
    "vault-mem: long-term memory kept as Markdown files a person can read and edit. "
    "Start a session with memory_search (no query) for recent notes; use list_by_domain when "
    "search misses; read a record in full with memory_read."
)

# Every note as one RFC 6570 template: ``{+path}`` keeps its slashes (docs/tools.md, "permalink").
NOTE_TEMPLATE = t.ResourceTemplate(
    uri_template="memory://{+path}",
    name="note",
    description="A note of the vault by its path without .md (memory://acme/x100/Queue decision): "
                "its Markdown, frontmatter included. Each path segment may be percent-encoded.",
    mime_type="text/markdown",
)


def call(vault: Vault, spec: ToolSpec, arguments: dict[str, Any] | None, caller: Agent | None = None,
         read_only: bool = False) -> dict[str, Any]:
    """Run one tool call by ``caller`` (None: unlimited) to an answer dict. Never raises."""
    try:
        raw = dict(arguments or {})
        for theirs, ours in spec.arg_map:
            if ours in raw:  # our name is not a parameter of the compat tool: do not take it silently
                return error_answer(InvalidInput(ours, f"unknown parameter {ours!r}; accepted: "
                                                 f"{', '.join(spec.names)}"))
            if theirs in raw:
                raw[ours] = raw.pop(theirs)
        _admit(spec, raw, caller, read_only)
        handler = spec.handler
        agent = caller_name(caller, raw)
        started = time.time()
        vault.check()  # may wait for a first build: not yet a call in flight (the check waits for those)
        try:
            with vault.answering(), view_of(vault, caller) as view:
                answer = handler(view, raw)
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


def caller_of(ctx: Any, fixed: Agent | None) -> Agent | None:
    """The agent a request acts as: the one its HTTP request carries, else the server's own."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, dict) and CALLER in scope:
        found = scope[CALLER]
        return found if isinstance(found, Agent) else None
    return fixed


class Calls:
    """Tool calls of one server, run in its call threads (at most ``call_threads`` at once)."""

    def __init__(self, vault: Vault, read_only: bool = False) -> None:
        self.vault = vault
        self.config = vault.index.config
        self.read_only = read_only
        self.specs = {spec.name: spec for spec in tools_for(vault.compat, meaning=vault.meaning is not None)}
        self._limiter: anyio.CapacityLimiter | None = None  # made on first use, inside the event loop

    async def run(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None) -> t.CallToolResult:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.config.call_threads)
        # The result is made in the call thread too: the event loop, which every request of this
        # worker passes through (writes on their way to worker 1 as well), does no more than it must.
        return await anyio.to_thread.run_sync(self.result, name, arguments, caller, limiter=self._limiter)

    def result(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None) -> t.CallToolResult:
        return text_result(self.text(name, arguments, caller))

    def text(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None) -> str:
        """The call's answer as its text block (``answers.answer_text``)."""
        return answer_text(name, self.answer(name, arguments, caller), self.config.max_answer_chars)

    def answer(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None) -> dict[str, Any]:
        """The call run in this thread (worker 1 runs the others' write calls so: mcp_server/delegate.py)."""
        spec = self.specs.get(name)
        if spec is None:
            return error_answer(InvalidInput("name", f"unknown tool {name!r}; tools: {', '.join(self.specs)}"))
        return call(self.vault, spec, arguments, caller, self.read_only)


def build_server(vault: Vault, caller: Agent | None = None, read_only: bool = False, calls: Calls | None = None,
                 delegate: Delegate | None = None) -> Server[Any]:
    """The MCP server of ``vault``; ``caller`` limits a stdio client (``serve --agent``),
    ``read_only`` serves no write tool (``serve --read-only``); ``calls`` runs its calls (made
    here when not given); ``delegate``: write calls go to worker 1 (mcp_server/delegate.py)."""
    calls = calls or Calls(vault, read_only)
    specs = calls.specs
    listing = [
        t.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema(vault.index.config),
            output_schema=output_schema(spec.name),
            annotations=t.ToolAnnotations(
                read_only_hint=spec.read_only,
                idempotent_hint=spec.read_only,
                destructive_hint=spec.name == "memory_delete",
            ),
        )
        for spec in specs.values()
    ]
    reads_only = [tool for tool in listing if specs[tool.name].read_only]
    if read_only:
        listing = reads_only
    # A host that renders MCP Apps (SEP-1865) gets memory_search's view; any other, the same bytes as before.
    viewed = {id(tool): _with_view(tool) for tool in listing}

    async def on_list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        agent = caller_of(ctx, caller)
        tools = reads_only if agent is not None and agent.read_only else listing
        return t.ListToolsResult(tools=[viewed[id(tool)] for tool in tools] if _renders_apps(ctx) else tools)

    async def on_call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        spec = specs.get(params.name)
        agent = caller_of(ctx, caller)
        if delegate is not None and spec is not None and not spec.read_only and not read_only:
            return await delegate.call(spec.name, params.arguments, agent)
        return await calls.run(params.name, params.arguments, agent)

    async def on_list_resources(ctx: Any, params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        start = int(cursor) if cursor and cursor.isdigit() else 0
        resources, next_cursor = await anyio.to_thread.run_sync(_resource_page, vault, start, caller_of(ctx, caller))
        if start == 0 and _renders_apps(ctx):  # as tools/list: only a host that renders it hears of it
            resources.insert(0, t.Resource(uri=mcp_app.URI, name=mcp_app.NAME, mime_type=mcp_app.MIME))
        return t.ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def on_list_resource_templates(ctx: Any, params: t.PaginatedRequestParams | None
                                         ) -> t.ListResourceTemplatesResult:
        return t.ListResourceTemplatesResult(resource_templates=[NOTE_TEMPLATE])

    async def on_read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        if uri == mcp_app.URI:
            html = await anyio.to_thread.run_sync(mcp_app.app_html)
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text=html, mime_type=mcp_app.MIME)])
        text = await anyio.to_thread.run_sync(_resource_text, vault, uri, caller_of(ctx, caller))
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")])

    server = Server(
        "vault-mem",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )
    server.extensions[EXTENSION_ID] = {}
    return server


def _with_view(tool: t.Tool) -> t.Tool:
    """``tool`` naming its MCP Apps view in ``_meta.ui.resourceUri`` (memory_search's only)."""
    if tool.name != mcp_app.TOOL:
        return tool
    return tool.model_copy(update={"meta": {"ui": {"resourceUri": mcp_app.URI}}})


def _renders_apps(ctx: Any) -> bool:
    """Whether the client announced the MCP Apps extension (a request without a session: no)."""
    try:
        return client_supports_apps(ctx)
    except (AttributeError, RuntimeError):
        return False


def _resource_page(vault: Vault, start: int, caller: Agent | None) -> tuple[list[t.Resource], str | None]:
    config = vault.index.config
    try:
        with view_of(vault, caller) as view:
            column = view.snapshot.column("path")
            paths = sorted(p for d in view.snapshot.all_docs() if (p := column[d]))
    except VaultUnavailable:
        return [], None
    page = paths[start: start + config.resource_page]
    resources = [
        t.Resource(uri=resource_uri(p), name=p.rpartition("/")[2][:-3], mime_type="text/markdown")
        for p in page
    ]
    more = start + config.resource_page < len(paths)
    return resources, str(start + config.resource_page) if more else None


def _resolve_uri(view: View, uri: str) -> int:
    """The note a resource URI names, in its percent-encoded form (what resources/list gives)
    or its readable form (the permalink tools answer). A URI that can only be readable (a
    space or a non-ASCII character in it) is taken as written; an encoded-looking one is
    decoded first and, if that names nothing, taken as written (a note may have ``%`` in
    its name)."""
    if "%" in uri and uri.isascii() and " " not in uri:
        try:
            return resolve_ref(view, unquote(uri), "uri")
        except NotFound:
            pass
    return resolve_ref(view, uri, "uri")


def _resource_text(vault: Vault, uri: str, caller: Agent | None) -> str:
    from mcp.shared.exceptions import MCPError

    try:
        with view_of(vault, caller) as view:
            docnum = _resolve_uri(view, uri)
            record = view.snapshot.record(docnum)
            data, real = view.note_bytes(record, "uri")
            if not view.may_see(str(record["path"]), None, record.get("real"), real):
                raise no_note(uri, vault.index.config.shown_ref_chars)
    except (NotFound, InvalidInput) as exc:
        raise MCPError(code=t.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
    except OSError as exc:
        message = f"cannot read {uri}: {exc.strerror}"
        raise MCPError(code=t.INVALID_PARAMS, message=message, data={"uri": uri}) from None
    return data.decode("utf-8", errors="replace").lstrip("\ufeff")

