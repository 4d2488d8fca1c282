"""Rows written: how a task tells the catalog how much it wrote (for HAS_DATA dependencies).

Call :func:`report_rows_written` from inside a task with the rows it inserted, updated and deleted. The
catalog listener, which runs in the same worker process right after the task, stores the count on the
task's slot record. The count is also pushed as the XCom ``leastaction_rows_written``; a task whose code
runs in another process (a virtualenv, a container, a pod) pushes that XCom itself, and the listener
reads it when no report was made in its own process. A task that reports nothing has unknown rows
written: it never satisfies HAS_DATA. A count that could not be read (Airflow's API or the supervisor away,
after a few tries) is not "nothing reported": :func:`pushed_rows` raises
:class:`~airflow_leastaction.exceptions.RowsUnreadableError`, and the success is recorded with its reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from airflow_leastaction.exceptions import RowsUnreadableError

ROWS_WRITTEN_KEY = "leastaction_rows_written"

#: Reads of the XCom before its count is reported unreadable, and the pause before the first retry
#: (doubled after each): a supervisor hiccup passes, an API that stays away does not hold the task long.
READ_TRIES = 3
READ_PAUSE = 0.25  # seconds

log = logging.getLogger(__name__)

_reported: dict[tuple[str, str, str, int], int] = {}
_lock = threading.Lock()


def _ti_key(ti) -> tuple[str, str, str, int]:
    map_index = getattr(ti, "map_index", -1)
    return (ti.dag_id, ti.task_id, ti.run_id, -1 if map_index is None else map_index)


def report_rows_written(count: int, *, inserted: int = 0, updated: int = 0, deleted: int = 0, ti=None) -> int:
    """Report the rows this task wrote (``count`` + ``inserted`` + ``updated`` + ``deleted``).

    :param count: rows written, or 0 when you pass the parts separately.
    :param inserted: rows inserted.
    :param updated: rows updated.
    :param deleted: rows deleted.
    :param ti: the task instance; default: the running task's, from the current context.
    :return: the total recorded.
    """
    total = int(count) + int(inserted) + int(updated) + int(deleted)
    if total < 0 or min(count, inserted, updated, deleted) < 0:
        raise ValueError(
            f"rows written cannot be negative (count={count}, inserted={inserted}, "
            f"updated={updated}, deleted={deleted})"
        )
    if ti is None:
        from airflow.sdk import get_current_context

        ti = get_current_context()["ti"]
    with _lock:
        _reported[_ti_key(ti)] = total
    ti.xcom_push(key=ROWS_WRITTEN_KEY, value=total)
    return total


def take_reported(ti) -> int | None:
    """The count the task reported in this process, once (None when it reported nothing)."""
    with _lock:
        return _reported.pop(_ti_key(ti), None)


def pushed_rows(ti, *, pause: Callable[[float], object] = time.sleep) -> int | None:
    """The count in the task's XCom ``leastaction_rows_written`` (None when absent or not a count).

    An unmapped task's XCom is read as the sequence of all its map indexes (one value, or none): Airflow
    logs a single missing XCom as an error ("XCom not found"), and most tasks report no rows, so reading
    it one at a time would put an error line in the log of every such task. A mapped task instance reads
    its own map index (a missing one is still logged so by Airflow).

    A read that raises is tried :data:`READ_TRIES` times, ``pause`` (seconds) between tries; then
    :class:`~airflow_leastaction.exceptions.RowsUnreadableError` is raised: an error is never "no rows".
    """
    for attempt in range(READ_TRIES):
        try:
            value = _read_pushed(ti)
            break
        except Exception as exc:
            if attempt + 1 == READ_TRIES:
                log.warning("leastaction: could not read XCom %s of %s", ROWS_WRITTEN_KEY, ti, exc_info=True)
                raise RowsUnreadableError(f"{ti.dag_id}.{ti.task_id}", _one_line(exc)) from exc
            pause(READ_PAUSE * 2**attempt)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        log.warning(
            "leastaction: XCom %s of %s.%s is %r, not a count of rows; rows written unknown",
            ROWS_WRITTEN_KEY,
            ti.dag_id,
            ti.task_id,
            value,
        )
        return None
    return value


def _read_pushed(ti) -> object:
    map_index = getattr(ti, "map_index", -1)
    if map_index is None or map_index < 0:
        value = ti.xcom_pull(task_ids=ti.task_id, key=ROWS_WRITTEN_KEY)
        return None if value == [] else value  # an empty sequence: nothing pushed
    return ti.xcom_pull(task_ids=ti.task_id, key=ROWS_WRITTEN_KEY, map_indexes=map_index)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """``exc`` as one short line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def reported_rows(ti) -> int | None:
    """Rows the task reported: in this process (:func:`report_rows_written`), else through the XCom.
    Raises :class:`~airflow_leastaction.exceptions.RowsUnreadableError` when the XCom could not be read."""
    reported = take_reported(ti)
    return reported if reported is not None else pushed_rows(ti)
