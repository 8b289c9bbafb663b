"""Connecting MCP clients: their config files (``configs``) and Claude Code's own command
(``claude_code``, the one module here that starts a process). docs/clients.md."""
