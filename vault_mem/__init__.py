"""vault-mem: a memory layer for AI agents over plain Markdown files.

Layers, each importing only from the ones above it in this list:

    errors      the exception tree
    vault/      the Markdown files: paths, walking, parsing, writing (knows nothing of git or Whoosh)
    git/        git, the only place it runs: history dates, commits as an agent, sync between clones
    history/    what cannot be rebuilt: the journal behind log and undo, each agent's state
    search/     the search engine over a Whoosh index; everything above asks its face, search/api.py
    served/     what every tool call runs against: the served vault and one call's view of it
                (context), parameter declarations and validation (params), the ref resolver (refs)
    runtime/    what runs while serving (beside served/): the first build, the watcher, merges, sync
    reads/      the read tools, one module per contract, plain functions over the view
    writes/     the write tools: atomic file writes, the trash, indexing before answering
    ui/         the page for people (activity, undo, inbox, search) and the MCP Apps view
    mcp_server/ MCP wiring only: the tool table, answers, transports
    cli         argument parsing and printing only
"""

__version__ = "0.8.0"
