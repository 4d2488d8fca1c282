"""Graph validation at DAG parse time, waves, and ``airflow-leastaction graph``."""

from __future__ import annotations

import textwrap

import pytest

from airflow_leastaction.cli import main
from airflow_leastaction.exceptions import (
    CountWithoutNError,
    DependencyCycleError,
    InactiveDependencyError,
    InvalidCountError,
    SelfDependencyError,
    UnknownDependencyTypeError,
    UnknownTaskError,
)


def write_dag(tmp_path, body: str) -> str:
    path = tmp_path / "probe_dag.py"
    path.write_text(
        textwrap.dedent("""
        from airflow.sdk import DAG
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow_leastaction.run_conditions import run_condition, success, depends_on
        with DAG("rc_probe", schedule=None):
            a, b, c = (EmptyOperator(task_id=t) for t in "abc")
    """)
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return str(path)


class TestGraphCommand:
    @pytest.mark.parametrize(
        "body,error",
        [
            ("run_condition(a, success('a'))", SelfDependencyError),
            ("run_condition(a, success('zz'))", UnknownTaskError),
            ("run_condition(b, a)\nrun_condition(a, b)", DependencyCycleError),
            ("run_condition(c, a, b, when='N', count=5)", InvalidCountError),
            ("run_condition(c, a, when='ALL', count=1)", CountWithoutNError),
            ("run_condition(c, depends_on(a, 'MAYBE'))", UnknownDependencyTypeError),
            ("run_condition(b, a, active=False)\nrun_condition(c, b)", InactiveDependencyError),
        ],
    )
    def test_graph_exits_with_a_distinct_status_per_error_class(self, airflow_db, tmp_path, capsys, body, error):
        assert main(["graph", "rc_probe", "--dag-file", write_dag(tmp_path, body)]) == error.exit_status
        assert "rc_probe" in capsys.readouterr().err

    def test_graph_prints_the_waves(self, airflow_db, tmp_path, capsys):
        body = "run_condition(b, a)\nrun_condition(c, a, b, when='ANY')"
        assert main(["graph", "rc_probe", "--dag-file", write_dag(tmp_path, body)]) == 0
        out = capsys.readouterr().out.splitlines()
        head = out.index("DAG rc_probe: 3 active tasks in 3 waves")
        assert out[head + 1 :] == ["wave 1: a", "wave 2: b", "wave 3: c [ANY of a, b]"]

    def test_graph_reads_the_dags_folder(self, airflow_db, capsys):
        assert main(["graph", "rc_failure_path"]) == 0
        out = capsys.readouterr().out
        assert "wave 1: load, other" in out and "alert" in out

    def test_an_unknown_dag_id_exits_3(self, airflow_db, tmp_path, capsys):
        assert main(["graph", "rc_nope", "--dag-file", write_dag(tmp_path, "")]) == 3
