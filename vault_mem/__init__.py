"""vault-mem: a memory layer for AI agents over plain Markdown files.

Layers, each importing only from the ones above it in this list:

    errors      the exception tree
    vault/      reading and writing the Markdown files (knows nothing of Whoosh)
    index/      the Whoosh index: schema, build, reconcile, substring search, watcher
    served/     what every tool call runs against: the served vault and its index (context),
                parameter declarations and validation (params), the ref resolver (refs)
    reads/      the read tools, one module per contract, plain functions over the index
    writes/     the write tools: atomic file writes, the trash, indexing before answering
    server/     MCP wiring only
    cli         argument parsing and printing only
"""

__version__ = "0.1.0"
