"""What cannot be rebuilt from the files: the journal of every change made by agents, imports
and ``tidy`` (what ``log`` and ``undo`` read), and each agent's state (its inbox marks, the
notes it wrote). Kept apart from the search engine's disposable index (docs/index-and-sync.md)."""
