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
from typing import Any
from urllib.parse import unquote

import anyio
import mcp.types as t
from mcp.server.apps import EXTENSION_ID, client_supports_apps
from mcp.server.lowlevel import Server

from vault_mem import __version__
from vault_mem.errors import InvalidInput, NotFound, VaultUnavailable
from vault_mem.mcp_server.calls import Calls, call
from vault_mem.mcp_server.delegate import Delegate
from vault_mem.mcp_server.outputs import output_schema
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, View, view_of
from vault_mem.served.refs import no_note, resolve_ref
from vault_mem.served.vaults import VAULT_PARAM, Reach, Served
from vault_mem.ui import mcp_app
from vault_mem.vault.note import PERMALINK_PREFIX, resource_uri

__all__ = ["CALLER", "REACH", "Calls", "build_server", "call", "caller_of", "reach_of"]

log = logging.getLogger("vault_mem.mcp_server")
CALLER = "vault_mem.caller"  # the ASGI scope key of an HTTP request's agent (transports.py)
REACH = "vault_mem.reach"  # the ASGI scope key of what an HTTP request reaches, vault by vault (transports.py)

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


def caller_of(ctx: Any, fixed: Agent | None) -> Agent | None:
    """The agent a request acts as: the one its HTTP request carries, else the server's own."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, dict) and CALLER in scope:
        found = scope[CALLER]
        return found if isinstance(found, Agent) else None
    return fixed


def reach_of(ctx: Any, served: Served, fixed: Reach) -> Reach:
    """What a request reaches: what its HTTP request carries (``REACH``; an HTTP request with a
    caller alone reaches every vault as it), else the server's own (stdio)."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, dict):
        if isinstance(scope.get(REACH), dict):
            reach: Reach = scope[REACH]
            return reach
        if CALLER in scope:
            return served.everywhere(caller_of(ctx, None))
    return fixed


def build_server(vault: Vault | Served, caller: Agent | None = None, read_only: bool = False,
                 calls: Calls | None = None, delegate: Delegate | None = None,
                 reach: Reach | None = None) -> Server[Any]:
    """The MCP server of ``vault`` (or of several: a ``Served``); ``caller`` limits a stdio client
    (``serve --agent``) in every vault, or ``reach`` names the vaults it reaches and its caller in
    each; ``read_only`` serves no write tool (``serve --read-only``); ``calls`` runs its calls
    (made here when not given); ``delegate``: write calls go to worker 1 (mcp_server/delegate.py)."""
    calls = calls or Calls(vault, read_only)
    served = calls.served
    config = calls.config
    fixed = served.everywhere(caller) if reach is None else reach
    specs = calls.specs
    listing = [
        t.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=_with_vault(spec.input_schema(config), served, config),
            output_schema=output_schema(spec.name, served.several),
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
        callers = list(reach_of(ctx, served, fixed).values())
        limited = bool(callers) and all(agent is not None and agent.read_only for agent in callers)
        tools = reads_only if limited else listing
        return t.ListToolsResult(tools=[viewed[id(tool)] for tool in tools] if _renders_apps(ctx) else tools)

    async def on_call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        spec = specs.get(params.name)
        agent = caller_of(ctx, caller)
        # With one vault the caller alone says it all (and worker 1 hears just that, as before).
        reached = reach_of(ctx, served, fixed) if served.several or reach is not None else None
        if delegate is not None and spec is not None and not spec.read_only and not read_only:
            return await delegate.call(spec.name, params.arguments, agent, reached)
        return await calls.run(params.name, params.arguments, agent, reached)

    async def on_list_resources(ctx: Any, params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        start = int(cursor) if cursor and cursor.isdigit() else 0
        resources, next_cursor = await anyio.to_thread.run_sync(_resource_page, served, start,
                                                                reach_of(ctx, served, fixed))
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
        text = await anyio.to_thread.run_sync(_resource_text, served, uri, reach_of(ctx, served, fixed))
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


def _with_vault(schema: dict[str, Any], served: Served, config: Any) -> dict[str, Any]:
    """A tool's input schema, with ``vault`` when several vaults are served (with one: as before)."""
    if not served.several:
        return schema
    return {**schema, "properties": {**schema["properties"], VAULT_PARAM.name: VAULT_PARAM.schema(config)}}


def _resource_page(served: Served, start: int, reach: Reach) -> tuple[list[t.Resource], str | None]:
    """One page of the notes of every vault ``reach`` includes, vault by vault in the order served,
    each vault's by path; a URI names its vault when several are served."""
    config = served.primary.index.config
    paths: list[tuple[Vault, str]] = []
    for name in served.reachable(reach):
        vault = served.vaults[name]
        try:
            with view_of(vault, reach[name]) as view:
                column = view.snapshot.column("path")
                mine = sorted(p for d in view.snapshot.all_docs() if (p := column[d]))
            paths.extend((vault, p) for p in mine)
        except VaultUnavailable:
            continue
    page = paths[start: start + config.resource_page]
    resources = [
        t.Resource(uri=_uri(vault, p), name=p.rpartition("/")[2][:-3], mime_type="text/markdown")
        for vault, p in page
    ]
    more = start + config.resource_page < len(paths)
    return resources, str(start + config.resource_page) if more else None


def _uri(vault: Vault, path: str) -> str:
    """The resource URI of the note at ``path`` of ``vault``: named after it when several are served."""
    uri = resource_uri(path)
    return f"{PERMALINK_PREFIX}{vault.name}/{uri[len(PERMALINK_PREFIX):]}" if vault.named else uri


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


def _resource_text(served: Served, uri: str, reach: Reach) -> str:
    """The Markdown of the note ``uri`` names: in the vault it names (``memory://NAME/...``, NAME a
    vault the request reaches), else in the default one (an old permalink)."""
    from mcp.shared.exceptions import MCPError

    named = served.named_in(uri.strip(), reach)
    name = named[0] if named is not None else served.chosen(None, reach)
    vault = served.vaults[name]
    try:
        with view_of(vault, reach[name]) as view:
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

