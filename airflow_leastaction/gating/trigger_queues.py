"""Which triggerer queue a gate waits in: where most of its parents' projects (or DAGs) hash. Pure.

``[leastaction] trigger_queues`` lists the deployment's triggerer queues. Each of a gate's parents (the
catalog tasks it waits on) hashes into that list by its project and account, not its name or partition:
every task of a project maps to one queue, so a team's gates, which mostly wait on their own team's
tasks, wait together in one triggerer, whose shared poll then reads each parent once for all of them.
The hash is stable (SHA-1, the same in every process and on every machine, unlike Python's ``hash``).

The gate goes to the queue most of its parents hash to, counting parents (each distinct parent once),
not distinct projects: the triggerer reads a gate's parents one by one, so the queue that already
watches most of them is where the gate adds the fewest reads; counting projects would let one parent
of another project outweigh several of the gate's own. A tie is broken by a stable hash of the gate's
parent set among the tied queues (in the order listed), so tied gates spread over them instead of
piling into the first, and every process gives the same answer.

A parent that is an Airflow task or DAG (named ``dag.task``, ``dag:task`` or ``dag::run``) hashes by its
DAG as well: every Airflow task of a deployment shares the deployment's project, so by project alone the
run-condition gates of a whole deployment, which wait on their own DAGs' tasks, would all wait in one
queue; by DAG they spread, and a DAG's gates still wait together. A gate with no catalog parent hashes
its own task's full identity (:func:`own_queue`), for the same reason.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.identity import TaskIdentity, airflow_task_ids

#: The setting, as errors name it.
SETTING = "[leastaction] trigger_queues"

#: A queue name: what Airflow's trigger table (256 characters) and Celery's queue names take.
QUEUE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,255}")

#: Between the fields of one hashed key, and between the parents of a parent set.
_FIELD, _ITEM = "\x1f", "\x1e"


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


def stable_hash(key: str) -> int:
    """The first 8 bytes of the SHA-1 of ``key`` (UTF-8) as a big-endian number: the same everywhere."""
    return int.from_bytes(hashlib.sha1(key.encode(), usedforsecurity=False).digest()[:8], "big")


def _identity_key(task: TaskIdentity) -> str:
    return _FIELD.join((task.name, task.project, task.account, task.partition))


def group_key(parent: TaskIdentity) -> str:
    """What a parent hashes by: its project and account and, for an Airflow task's or DAG's name
    (``dag.task``, ``dag:task``, ``dag::run``), its DAG; never its task name or partition."""
    ids = airflow_task_ids(parent.name)
    return _FIELD.join((parent.project, parent.account, *((ids[0],) if ids else ())))


def queue_of(parent: TaskIdentity, queues: Sequence[str]) -> str:
    """The queue ``parent``'s group (:func:`group_key`) hashes to: every task of a project outside Airflow,
    and every task of one Airflow DAG, maps to the same one."""
    return queues[stable_hash(group_key(parent)) % len(queues)]


def own_queue(task: TaskIdentity, queues: Sequence[str]) -> str:
    """The queue a gate with no catalog parent waits in: its own task's full identity hashed."""
    return queues[stable_hash(_identity_key(task)) % len(queues)]


def choose_queue(parents: Iterable[TaskIdentity], queues: Sequence[str]) -> str:
    """The queue most of ``parents`` hash to (a tie: the parent set's hash picks among the tied queues).
    ``parents`` must name one; their order and repetition do not matter."""
    if not queues:
        raise ValueError("no queue to choose from")
    distinct = list(dict.fromkeys(parents))
    if not distinct:
        raise ValueError("no parent to choose a queue by")
    counts = Counter(queue_of(p, queues) for p in distinct)
    most = max(counts.values())
    tied = [q for q in queues if counts[q] == most]
    if len(tied) == 1:
        return tied[0]
    parent_set = _ITEM.join(sorted(_identity_key(p) for p in distinct))
    return tied[stable_hash(parent_set) % len(tied)]
