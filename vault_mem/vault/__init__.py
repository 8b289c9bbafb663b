"""The files: paths and confinement, walking with ignore rules, parsing and writing notes.

Nothing here knows about Whoosh or MCP.
"""
