"""A cron timetable whose logical date is the data epoch: the start of the interval a run covers."""

from __future__ import annotations

from typing import Any

from airflow.timetables.base import DataInterval
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_leastaction.intervals.slots import cron_granularity, normalize_cron, resolve_timezone


class IntervalCronTimetable(CronDataIntervalTimetable):
    """Schedule data intervals with a cron expression, timezone-aware and DST-correct.

    A run's logical date is the start of its interval (the data epoch, not the wall clock), which is the
    slot the catalog records and children's ``ParentIntervalSensor`` compare against. The summary shown
    in the UI carries the granularity children are judged at, e.g. ``0 2 * * * (day, Europe/Paris)``.

    :param cron: five-field cron expression or preset (``@daily``...). Checked when the DAG is parsed.
    :param timezone: IANA timezone the cron is read in.
    """

    def __init__(self, cron: str, timezone: str = "UTC") -> None:
        expression = normalize_cron(cron)
        resolve_timezone(timezone)
        self._timezone_name = timezone if isinstance(timezone, str) else getattr(timezone, "name", "UTC")
        super().__init__(expression, self._timezone_name)
        self.granularity = cron_granularity(expression)

    @property
    def summary(self) -> str:
        return f"{self._expression} ({self.granularity}, {self._timezone_name})"

    def infer_manual_data_interval(self, *, run_after):
        # A manual run whose date lands exactly on a slot covers the interval that starts there (its data
        # epoch); any other date gets the last complete interval, as Airflow's own cron timetable does.
        start = self._align_to_prev(run_after)
        if start == run_after:
            return DataInterval(start=start, end=self._get_next(start))
        return super().infer_manual_data_interval(run_after=run_after)

    def serialize(self) -> dict[str, Any]:
        return {"expression": self._expression, "timezone": self._timezone_name}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> IntervalCronTimetable:
        return cls(data["expression"], data["timezone"])
