"""MCP wiring only: the tool table, answers, transports. No query logic lives here."""
