"""A test's hold on a build or a merge at a named step, so that a test stops the process there
(a signal, a kill) instead of racing it.

``VAULT_MEM_HOLD_AT=STEP=PATH`` in a process's environment makes it, each time it reaches
``STEP``, write its process id to ``PATH`` and wait while that file exists: the test waits for
the file, acts (interrupts or kills the process, kills a build worker), then deletes the file to
let the process go on. The steps:

- ``build-batch``: a build has published a batch (its notes are searchable) and not the last one.
- ``check-commit``: a start-up check has read the notes that changed and not yet committed them.
- ``merge-writing``: a merge has written part of its merged segment into its work folder.
- ``merge-swap``: a merge has written its whole segment and not yet swapped it in.
- ``merge-publish``: a merge holds the write lock and has moved its segment into the index
  folder, and not yet written the table of contents that names it.

Unset (as it always is outside the tests) it costs one environment lookup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

HOLD_AT = "VAULT_MEM_HOLD_AT"
# Seconds between two looks at the marker while held: a test's hook, not a setting (no person tunes
# it); short, so the process goes on soon after the test deletes the file, and a sleep, so that
# Ctrl-C and SIGTERM still reach the process between two looks.
HELD_POLL = 0.01


def hold_at(step: str) -> None:
    """Wait here while the test that named ``step`` in ``VAULT_MEM_HOLD_AT`` holds this process."""
    spec = os.environ.get(HOLD_AT)
    if not spec:
        return
    name, _, path = spec.partition("=")
    if name != step or not path:
        return
    marker = Path(path)
    temp = marker.with_name(f".{marker.name}.tmp")
    temp.write_text(str(os.getpid()), encoding="ascii")
    os.replace(temp, marker)  # whole when it appears
    while marker.exists():
        time.sleep(HELD_POLL)
