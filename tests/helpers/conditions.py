"""Acting on a condition, not on a clock: a test's step runs once what it waits for holds."""

from __future__ import annotations

import threading
import time


def when(condition, then) -> threading.Thread:
    """Run ``then`` in a thread as soon as ``condition()`` holds (checked every 50 ms)."""

    def watch():
        while not condition():
            time.sleep(0.05)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def run_acting_when(run, condition, then):
    """``run()``, with ``then`` run in a thread as soon as ``condition()`` holds (:func:`when`); returns what
    ``run()`` returns, once ``then`` has finished too (it may take 5 s more)."""
    thread = when(condition, then)
    result = run()
    thread.join(5)
    assert not thread.is_alive(), f"{then.__name__} was still running 5 s after the run"
    return result
