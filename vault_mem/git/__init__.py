"""Git, the only place it runs: ``repo`` (running git safely), ``history`` (what git knows of each
note: dates, commits, uncommitted), ``commit`` (commits as an agent, from plumbing) and ``sync``
(fetch, merge and push between clones; docs/git.md). Below the index; knows nothing of Whoosh."""
