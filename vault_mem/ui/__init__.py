"""The page for people (docs/ui.md): what agents changed, with diffs, undo, inboxes, search and
read-only notes, served by ``vault-mem ui`` and by ``serve --http`` at ``/``; and the MCP Apps
view (``ui://`` resource) that hosts which render MCP Apps show beside ``memory_search``."""
