"""Everything that knows Whoosh's internals: the patches (``seam.py``, ``parts.py``,
``postings.py``, ``mapping.py``) and the private names read (``seam.py``, ``files.py``),
written for the one whoosh-reloaded release pinned in pyproject.toml."""
