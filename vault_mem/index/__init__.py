"""The Whoosh index: a disposable cache of the vault, rebuilt or reconciled from the files."""
