"""Looking after the watchdog observer (``watcher.py``): what it is asked to report, stopping it
whole, telling whether all its threads still run, and keeping its one benign warning quiet."""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any

from watchdog import events as watchdog_events
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
)
from watchdog.observers import Observer

log = logging.getLogger("vault_mem.watch")

# What watchdog (7 on) queues when the operating system dropped events: the kernel's inotify queue
# overflowed (Linux), or a watch's ReadDirectoryChangesW buffer did (Windows). It names the watch,
# not a changed path. Asked for like any change: an event filter that leaves it out drops it, and
# nothing else says that saves went unheard (watchdog 6 has no such event: the periodic check is all).
EVENTS_LOST: list[type[FileSystemEvent]] = [
    lost for lost in [getattr(watchdog_events, "EventsLostEvent", None)] if lost is not None]

# Every change, but not a file being opened or closed unwritten: without this filter inotify
# reports each read the server itself makes (two events per excerpt and per memory_read),
# and watchdog's threads take the GIL to pass each one along only for the handler to drop it.
CHANGES: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent,
    DirCreatedEvent, DirDeletedEvent, DirModifiedEvent, DirMovedEvent, *EVENTS_LOST]
# With inotify (Linux) a finished write is its close, so the modified events are left out of the
# kernel's mask as well: one per write(2), and watchdog adds one for the folder of every file
# created, moved or deleted. A save made by a temp file and a rename is then 3 events, not 7,
# in every process watching the vault. FSEvents (macOS), Windows and polling report no close:
# there a change is a modified event.
CLOSES: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent, *EVENTS_LOST]


INOTIFY = getattr(Observer, "__name__", "") == "InotifyObserver"  # Linux: a watch on every folder


def changes_to_watch() -> list[type[FileSystemEvent]]:
    """The events this platform's observer is asked for."""
    return CLOSES if INOTIFY else CHANGES


def stop_observer(observer: Any, wait: float) -> None:
    """Stop an observer and every thread it started, even when watchdog's own bookkeeping fails
    (after many folder moves its path-to-watch map can be stale and ``stop()`` raises KeyError
    before it stops the thread reading the kernel queue). ``wait``: seconds for each thread to end
    (``observer_stop_wait``; one still running after it is a daemon, never a hang)."""
    try:
        observer.stop()
    except Exception as exc:
        log.debug("stopping the file observer: %s: %s", type(exc).__name__, exc)
        reader = getattr(observer, "_inotify_fd", None)
        if reader is not None:
            with contextlib.suppress(Exception):
                reader.stop()
                reader.join(timeout=wait)
    with contextlib.suppress(RuntimeError):
        observer.join(timeout=wait)


def observer_alive(observer: Any) -> bool:
    """The observer thread, its emitters and (inotify) the thread reading the kernel queue all run."""
    threads = [observer, *observer.emitters, getattr(observer, "_inotify_fd", None)]
    return all(thread.is_alive() for thread in threads if thread is not None)


def quiet_benign_watchdog_warning() -> None:
    # watchdog's recursive inotify watch may add a just-created sub-folder twice (once from its
    # create event, once from its scan of the new parent) and warns; the callback is the same and
    # nothing is lost. Under ``-W error`` the warning would kill the thread reading the kernel queue.
    warnings.filterwarnings("ignore", message=r"Callback with id .* already exists", category=RuntimeWarning)
