"""What runs while a vault is served: bringing the index up (``lifecycle``: the first build in a
child process, the reconcile and the background merge scheduler), following the files
(``watcher``) and the git sync loop (``syncloop``). Above the index; knows nothing of MCP."""
