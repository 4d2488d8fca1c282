"""What a command of ``airflow-leastaction`` itself wrote on stderr, without Airflow's own log lines."""

from __future__ import annotations

import re

#: A line of Airflow's own log: Airflow 3.1 warns on stderr, each time a command reads the catalog's
#: connection, that its type (leastaction_catalog) has an underscore.
AIRFLOWS_LOG_LINE = re.compile(r"^\S+ \[\w+ *\] .* \[airflow[\w.]*\]")


def own_lines(err: str) -> list[str]:
    """What the command itself wrote on stderr."""
    return [line for line in err.strip().splitlines() if not AIRFLOWS_LOG_LINE.match(line)]
