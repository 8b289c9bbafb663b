"""The MCP Apps view (SEP-1865) of ``memory_search``: one ``ui://`` HTML resource that a host
renders beside the tool's answer (docs/ui.md, "Inside MCP clients"). The host hands it the
tool's result and forwards its own searches as ``tools/call``; it talks to nothing else.
A host is told of it only when it announces the MCP Apps extension (``mcp_server/app.py``)."""

from __future__ import annotations

import functools
from importlib import resources

URI = "ui://vault-mem/search.html"
MIME = "text/html;profile=mcp-app"
TOOL = "memory_search"  # the tool whose answer the view shows
NAME = "vault-mem search view"


@functools.cache
def app_html() -> str:
    """The view as one document: a host renders one resource, so the script goes inside it."""
    folder = resources.files("vault_mem.ui").joinpath("static")
    page = folder.joinpath("mcp_app.html").read_text(encoding="utf-8")
    script = folder.joinpath("mcp_app.js").read_text(encoding="utf-8")
    if "</script" in script.lower():
        raise ValueError("mcp_app.js must not hold '</script'")
    return page.replace("<!--SCRIPT-->", f"<script>\n{script}</script>")
