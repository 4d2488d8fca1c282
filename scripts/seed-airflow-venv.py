#!/usr/bin/env python3
"""Install an Airflow minor that has no constraints file yet into a virtualenv, for its first test run.

Usage: scripts/seed-airflow-venv.py VENV MINOR [EXTRA_REQUIREMENT...]
  e.g. scripts/seed-airflow-venv.py .venv-airflow-3.2 3.2 "svcs<26"

Installs the newest release of apache-airflow MINOR with this package (editable, extras postgres, dbt,
dev) under the pins of the newest minor's constraints file wherever that Airflow accepts them: each pin pip
reports in a conflict is dropped and the resolution tried again, so the environment differs from the
newest minor's only where it must. The dropped pins are printed. EXTRA_REQUIREMENTs cap what the older
Airflow breaks with although pip would install it. Once the suite passes in VENV,
`make constraints AIRFLOW=MINOR` pins it into constraints/airflow-MINOR.txt.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN_AIRFLOW = re.compile(r"apache-airflow(-core|-task-sdk)?==")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def newest_constraints() -> Path:
    return max(ROOT.glob("constraints/airflow-*.txt"), key=lambda p: [int(n) for n in p.stem[8:].split(".")])


def conflicting(output: str, pinned: set[str]) -> set[str]:
    """The pinned packages pip names in a resolution conflict."""
    named = re.findall(r"The user requested \(constraint\) ([A-Za-z0-9_.-]+)==", output)
    named += re.findall(r"^\s+([A-Za-z0-9_.-]+) [0-9][^ ]* depends on", output, re.MULTILINE)
    return {canonical(n) for n in named} & pinned


def main(venv: str, minor: str, extra: list[str]) -> int:
    pip = [str(Path(venv) / "bin" / "python"), "-m", "pip"]
    if not Path(pip[0]).exists():
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True)
    lines = [line for line in newest_constraints().read_text().splitlines() if line and not line.startswith("#")]
    lines = [line for line in lines if not OWN_AIRFLOW.match(line)]
    seed = Path(venv) / "seed-constraints.txt"
    wanted = [f"apache-airflow=={minor}.*", *extra, "-e", f"{ROOT}[postgres,dbt,dev]"]
    dropped: list[str] = []
    try:
        while True:
            seed.write_text("\n".join(lines) + "\n")
            tried = subprocess.run(
                [*pip, "install", "--dry-run", "-c", str(seed), *wanted],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            if tried.returncode == 0:
                break
            bad = conflicting(tried.stdout, {canonical(line.split("==")[0]) for line in lines})
            if not bad:
                print(tried.stdout[-4000:], file=sys.stderr)
                return 1
            dropped += sorted(bad)
            lines = [line for line in lines if canonical(line.split("==")[0]) not in bad]
        subprocess.run([*pip, "install", "-q", "-c", str(seed), *wanted], check=True)
    finally:
        # The editable install leaves build metadata in the checkout (see the Makefile).
        shutil.rmtree(ROOT / "airflow_leastaction.egg-info", ignore_errors=True)
    print(
        f"{venv}: Airflow {minor} with the pins of {newest_constraints().name}, except: {', '.join(dropped) or 'none'}"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
