"""Which triggerer queue a gate waits in: where most of its parents hash. Pure.

``[leastaction] trigger_queues`` lists the deployment's triggerer queues. A gate's parents (the catalog
tasks it waits on) each hash into that list with a stable hash (SHA-1 of the parent's identity, the same
in every process and on every machine, unlike Python's ``hash``); the gate goes where most of them
hash, a tie to the queue listed first. Gates that wait on the same parents so wait in the same
triggerer, whose shared poll then reads each parent once for all of them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.identity import TaskIdentity

#: The setting, as errors name it.
SETTING = "[leastaction] trigger_queues"

#: A queue name: what Airflow's trigger table (256 characters) and Celery's queue names take.
QUEUE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,255}")


def check_queue(name: object, where: str) -> str:
    """``name`` if it is a valid queue name, else a :class:`ConfigurationError` naming ``where``."""
    if not isinstance(name, str) or QUEUE_NAME.fullmatch(name) is None:
        raise ConfigurationError(
            f"{where}: {name!r} is not a queue name (letters, digits and _ . : @ -, not starting with"
            " a punctuation mark, at most 256 characters)"
        )
    return name


def parse_queues(text: str) -> tuple[str, ...]:
    """The queues of ``[leastaction] trigger_queues`` (a comma list; empty: none), in the order listed."""
    names = [part.strip() for part in text.split(",")]
    if names == [""]:
        return ()
    queues: list[str] = []
    for name in names:
        check_queue(name, SETTING)
        if name in queues:
            raise ConfigurationError(f"{SETTING}: queue {name!r} is listed twice")
        queues.append(name)
    return tuple(queues)


def queue_of(parent: TaskIdentity, queues: Sequence[str]) -> str:
    """The queue ``parent`` hashes to: the same in every process, whatever else is listed with it."""
    key = "\x1f".join((parent.name, parent.project, parent.account, parent.partition)).encode()
    return queues[int.from_bytes(hashlib.sha1(key, usedforsecurity=False).digest()[:8], "big") % len(queues)]


def choose_queue(parents: Iterable[TaskIdentity], queues: Sequence[str]) -> str:
    """The queue most of ``parents`` hash to (a tie: the one listed first). ``parents`` must name one."""
    if not queues:
        raise ValueError("no queue to choose from")
    counts = Counter(queue_of(p, queues) for p in dict.fromkeys(parents))
    if not counts:
        raise ValueError("no parent to choose a queue by")
    most = max(counts.values())
    return next(q for q in queues if counts[q] == most)
