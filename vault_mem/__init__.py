"""vault-mem: a memory layer for AI agents over plain Markdown files.

Layers, each importing only from the ones above it in this list:

    errors      the exception tree
    vault/      reading and writing the Markdown files (knows nothing of Whoosh)
    index/      the Whoosh index: schema, build, reconcile, substring search, watcher
    query/      one module per tool contract, plain functions over the index
    server/     MCP wiring only
    cli         argument parsing and printing only
"""

__version__ = "0.1.0"
