"""The HAS_DATA rule: what a success's rows written say to a dependency that needs data. Pure.

A success satisfies HAS_DATA only when it wrote at least one row. Zero rows, or no count at all, is the
task's own answer and final. Rows that *could not be read* (the listener's read of the task's count
failed) are no answer: the dependency is not met but keeps waiting, for a re-run of the upstream that
records a new success with its rows, or for the gate's own wait to end it as a failure; never a skip.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DataCheck", "has_data", "rows_text"]


class DataCheck(NamedTuple):
    """What one success's rows mean to HAS_DATA: met, final (the answer cannot change for this success),
    and what the rows say (``wrote 3 rows``, ``wrote 0 rows``, ...), for the judgement's reason."""

    met: bool
    final: bool
    what: str

    @property
    def unreadable(self) -> bool:
        """The rows could not be read: not met, not final."""
        return not self.met and not self.final


def has_data(rows_written: int | None, rows_error: str | None = None) -> DataCheck:
    """Judge ``rows_written`` (None: unknown) and ``rows_error`` (why it is unknown: the read failed)."""
    if rows_written is not None and rows_written > 0:
        return DataCheck(True, True, f"wrote {rows_written} rows")
    if rows_written is None and rows_error:
        return DataCheck(
            False,
            False,
            f"its rows written could not be read ({rows_error}); a re-run of the upstream records a new "
            "success with its rows",
        )
    return DataCheck(False, True, "reported no rows written" if rows_written is None else f"wrote {rows_written} rows")


def rows_text(rows_written: int | None, rows_error: str | None = None) -> str | None:
    """How a slot's rows written read to a person (``3 rows written``, ``rows unknown: could not be read
    (...)``); None when the task reported nothing."""
    if rows_written is not None:
        return f"{rows_written} rows written"
    return f"rows unknown: could not be read ({rows_error})" if rows_error else None
