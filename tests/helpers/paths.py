"""Where the checkout's parts are, wherever a test file sits in the tiers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dags_examples"
DOCKER = ROOT / "docker"


def minor_key(minor: str) -> tuple[int, int]:
    """An Airflow minor ("3.10") as numbers, so that 3.10 sorts after 3.9."""
    major, rest = minor.split(".")
    return int(major), int(rest)


#: The constraints file of each supported Airflow minor, oldest first: {"3.1": .../airflow-3.1.txt, ...}.
CONSTRAINTS = {
    p.stem.removeprefix("airflow-"): p
    for p in sorted((ROOT / "constraints").glob("airflow-*.txt"), key=lambda p: minor_key(p.stem[len("airflow-") :]))
}
#: The newest supported minor's constraints: the release the Compose image runs.
NEWEST_CONSTRAINTS = CONSTRAINTS[next(reversed(CONSTRAINTS))]
