"""Resolving the catalog inside the scheduler or the API server must not touch their ORM session.

Run listeners fire in the scheduler's loop, between DAG runs it still holds in its thread-local session.
A connection look-up through Airflow's metastore secrets backend commits and closes that session, which
detached the scheduler's next run and crashed its loop. Run in a subprocess: the process context must be
set before Airflow is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import os, subprocess, sys
    import sqlalchemy as sa
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    from airflow import settings
    from airflow.models.log import Log
    import airflow_leastaction.catalog.engine as engine
    if sys.argv[1] == "same-thread":
        engine._airflow_session_in_use = lambda: False
    session = settings.Session()
    session.add(Log(event="probe"))
    session.flush()
    row = session.scalars(sa.select(Log)).first()
    print("url", engine.resolve_url())
    print("detached", sa.inspect(row).detached)
""")


def run_probe(tmp_path, mode: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update(
        AIRFLOW_HOME=str(tmp_path),
        _AIRFLOW_PROCESS_CONTEXT="server",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{tmp_path}/airflow.db",
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_resolving_the_catalog_in_a_server_process_leaves_its_orm_session_alone(tmp_path):
    out = run_probe(tmp_path, "own-thread")
    assert f"url sqlite:///{tmp_path}/leastaction/catalog.db" in out
    assert "detached False" in out


def test_the_same_look_up_in_the_callers_thread_would_detach_its_objects(tmp_path):
    # Why the look-up runs in a thread of its own: done in the caller's thread it closes the session.
    assert "detached True" in run_probe(tmp_path, "same-thread")
