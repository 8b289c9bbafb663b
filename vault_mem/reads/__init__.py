"""The read tools: one module per tool contract, plain functions from validated parameters
to an answer dict, over the index (and the file for full content). Nothing here writes a
file, and nothing here knows about MCP."""
