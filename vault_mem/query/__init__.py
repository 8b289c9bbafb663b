"""The query layer: one module per tool contract, plain functions from validated
parameters to an answer dict, over the index (and the file for full content).
Nothing here knows about MCP."""
