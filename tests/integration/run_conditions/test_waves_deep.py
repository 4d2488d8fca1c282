"""Deep graphs: validation, waves and the run-settled check work without recursion.

A chain of thousands of tasks is an ordinary DAG; each check must give its documented answer for it
instead of a RecursionError. No timing is asserted; the checks print how long they took.
"""

from __future__ import annotations

import textwrap

from airflow_leastaction.cli import main
from airflow_leastaction.exceptions import DependencyCycleError


# -- at parse time and in ``airflow-leastaction graph`` ------------------------------------------------
def deep_dag_file(tmp_path, body: str) -> str:
    path = tmp_path / "deep_dag.py"
    path.write_text(
        textwrap.dedent("""
        from airflow.sdk import DAG, chain
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow_leastaction.run_conditions import run_condition
        with DAG("rc_deep", schedule=None):
            tasks = [EmptyOperator(task_id=f"t{i:04d}") for i in range(1500)]
    """)
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return str(path)


class TestDeepDagFiles:
    def test_a_1500_task_chain_of_run_conditions_parses_and_graph_prints_its_waves(self, airflow_db, tmp_path, capsys):
        body = "for down, up in zip(tasks, tasks[1:]):\n    run_condition(down, up)\n"
        assert main(["graph", "rc_deep", "--dag-file", deep_dag_file(tmp_path, body)]) == 0
        out = capsys.readouterr().out
        assert "DAG rc_deep: 1500 active tasks in 1500 waves" in out and "wave 1500: t0000" in out

    def test_a_cycle_closed_at_the_end_of_a_1500_task_chain_is_a_cycle_error(self, airflow_db, tmp_path, capsys):
        body = (
            "chain(*reversed(tasks[:-1]))\n"  # t1498 >> ... >> t0000
            "run_condition(tasks[-2], tasks[-1])\n"  # t1498 after t1499
            "run_condition(tasks[-1], tasks[0])\n"
        )  # t1499 after t0000: a cycle
        path = deep_dag_file(tmp_path, body)
        assert main(["graph", "rc_deep", "--dag-file", path]) == DependencyCycleError.exit_status
        assert "dependency cycle: t1499 -> t1498 -> t1497 -> " in capsys.readouterr().err
