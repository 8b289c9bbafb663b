"""The search engine: the vault's Whoosh index (a disposable cache rebuilt or reconciled from
the files), how it is built, merged and kept, and how it answers. Everything above imports its
one face, ``search/api.py``; what knows Whoosh's internals lives in ``search/whoosh/``."""
