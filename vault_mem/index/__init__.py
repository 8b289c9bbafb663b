"""The Whoosh index, a disposable cache of the vault rebuilt or reconciled from the files:
Whoosh's patches and internals behind one seam (``whoosh_seam``), the versioned schema, build,
merge and store, and the query API everything above asks through (``query``, ``segments``)."""
