from airflow_leastaction.timetables.interval import IntervalCronTimetable

__all__ = ["IntervalCronTimetable"]
