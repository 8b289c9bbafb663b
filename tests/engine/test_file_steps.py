"""What the watcher and a commit wait for: the write tools' file steps under way when they ask
(search/commits.py ``FileSteps``; the write tools' turns are tests/integration/test_write_turns.py)."""

from __future__ import annotations

import threading

from test_write_turns import WAIT

from vault_mem.search.commits import FileSteps


def test_waiting_for_the_file_steps_does_not_wait_for_steps_begun_later() -> None:
    """``wait_steps`` waits for the steps under way when asked; under steady writes a wait for
    a moment with none under way could last as long as the writes do."""
    steps = FileSteps()
    first_began, later_began, first_done = threading.Event(), threading.Event(), threading.Event()
    stop = threading.Event()

    def first() -> None:
        steps.begin()
        first_began.set()
        assert first_done.wait(WAIT)
        steps.end()

    def later() -> None:
        steps.begin()
        later_began.set()
        stop.wait(WAIT)
        steps.end()

    threads = [threading.Thread(target=first), threading.Thread(target=later)]
    threads[0].start()
    assert first_began.wait(WAIT)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(steps.wait_steps(WAIT)))
    waiter.start()
    threads[1].start()
    assert later_began.wait(WAIT)
    assert waiter.is_alive()  # the first steps are still under way
    first_done.set()
    waiter.join(WAIT)
    stop.set()
    for thread in threads:
        thread.join(WAIT)
    assert outcome == [True]
    assert steps.wait_steps(0.0)  # none under way now
