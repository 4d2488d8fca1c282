"""Which triggerer queue a gate waits in: each parent hashes into ``[leastaction] trigger_queues`` by its
project and account, and by its DAG when it is an Airflow task (a stable hash); the gate goes where most
of its parents hash, a tie broken by a stable hash of its parent set among the tied queues; a gate with
no parent hashes its own task."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.trigger_queues import choose_queue, own_queue, parse_queues, queue_of
from airflow_leastaction.identity import TaskIdentity

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12).filter(str.strip)
# Names of Airflow tasks and DAG runs too, so that the DAG part of the rule is drawn as often as the rest.
airflow_ids = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
names = (
    names
    | st.builds("{}.{}".format, airflow_ids, airflow_ids)
    | st.builds("{}:{}".format, st.builds("{}.{}".format, airflow_ids, airflow_ids), airflow_ids)
    | st.builds("{}::run".format, airflow_ids)
)
plain_names = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters=".:"), min_size=1, max_size=12
).filter(str.strip)
# Few projects, so that parents share them and gates tie as often as they win outright.
projects = st.sampled_from(["sales", "finance", "marketing", "ops", "hr"]) | names
identities = st.builds(
    TaskIdentity,
    name=names,
    project=projects,
    account=st.sampled_from(["", "acct"]),
    partition=st.sampled_from(["", "0", "eu"]),
)
queue_lists = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=6, unique=True)


def sha1_number(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def dag_of(name: str) -> list[str]:
    """The DAG an Airflow task's name (``dag.task``; ``dag:task`` when the DAG id has a dot) or a DAG's run
    name (``dag::run``) names, as a list of at most one: split at a colon if there is one, else at the
    first dot; a name without both sides names none."""
    dag, sep, rest = name.partition(":") if ":" in name else name.partition(".")
    return [dag] if sep and dag and rest else []


def oracle(parents, queues) -> str:
    """From the rule's words: each distinct parent counts once for the queue its project and account (and,
    for an Airflow task's or DAG's name, its DAG) hash to; the queue with the most wins; of equals (in the
    order listed), the one the hash of the gate's parent set picks."""
    distinct = set(parents)
    count = {q: 0 for q in queues}
    for p in distinct:
        count[queues[sha1_number("\x1f".join([p.project, p.account, *dag_of(p.name)])) % len(queues)]] += 1
    best = max(count.values())
    tied = [q for q in queues if count[q] == best]
    parent_set = "\x1e".join(sorted(f"{p.name}\x1f{p.project}\x1f{p.account}\x1f{p.partition}" for p in distinct))
    return tied[sha1_number(parent_set) % len(tied)]


@given(parents=st.lists(identities, min_size=1, max_size=12), queues=queue_lists)
def test_a_gate_goes_where_most_of_its_parents_projects_hash_a_tie_to_the_parent_sets_hash(parents, queues):
    chosen = choose_queue(parents, queues)
    assert chosen in queues
    assert chosen == oracle(parents, queues)
    counts = Counter(queue_of(p, queues) for p in set(parents))
    assert counts[chosen] == max(counts.values())


@given(parents=st.lists(identities, min_size=1, max_size=12), queues=queue_lists, data=st.data())
def test_the_order_and_repetition_of_the_parents_do_not_change_the_queue(parents, queues, data):
    shuffled = data.draw(st.permutations(parents + parents[:1]))
    assert choose_queue(shuffled, queues) == choose_queue(parents, queues)


@given(
    name=plain_names,
    project=projects,
    account=st.sampled_from(["", "acct"]),
    other_name=plain_names,
    partition=st.sampled_from(["", "1", "us"]),
    queues=queue_lists,
)
def test_every_task_of_a_project_and_account_hashes_to_one_queue_whatever_its_name_or_partition(
    name, project, account, other_name, partition, queues
):
    parent = TaskIdentity(name, project, account)
    other = TaskIdentity(other_name, project, account, partition)
    assert queue_of(parent, queues) in queues
    assert queue_of(other, queues) == queue_of(parent, queues)


@given(dag=airflow_ids, tasks=st.lists(airflow_ids, min_size=1, max_size=6), project=projects, queues=queue_lists)
def test_every_airflow_task_of_one_dag_and_its_runs_hash_to_one_queue(dag, tasks, project, queues):
    members = [TaskIdentity(f"{dag}.{t}", project) for t in tasks] + [TaskIdentity(f"{dag}::run", project)]
    assert {queue_of(m, queues) for m in members} == {queue_of(members[0], queues)}


def test_the_dags_of_one_deployment_spread_over_the_queues_instead_of_sharing_its_project():
    queues = ["a", "b", "c"]
    placed = Counter(queue_of(TaskIdentity(f"dag_{i}.load", "deployment"), queues) for i in range(300))
    assert set(placed) == set(queues)
    assert min(placed.values()) >= 70  # of 300 DAGs: the DAG's hash splits them about evenly


@given(parents=st.lists(plain_names, min_size=1, max_size=8), project=projects, queues=queue_lists)
def test_a_gate_whose_parents_are_all_of_one_project_waits_in_that_projects_queue(parents, project, queues):
    gate = [TaskIdentity(name, project) for name in parents]
    assert choose_queue(gate, queues) == queue_of(TaskIdentity("any", project), queues)


@given(task=identities, queues=queue_lists)
def test_a_gate_without_parents_hashes_its_own_task_into_the_list(task, queues):
    assert own_queue(task, queues) in queues
    assert (
        own_queue(task, queues)
        == queues[sha1_number(f"{task.name}\x1f{task.project}\x1f{task.account}\x1f{task.partition}") % len(queues)]
    )


def test_tied_gates_spread_over_the_tied_queues_instead_of_the_first_listed():
    queues = ["a", "b"]
    sales, finance = TaskIdentity("x", "sales"), TaskIdentity("x", "finance")
    assert (queue_of(sales, queues), queue_of(finance, queues)) == ("a", "b")  # hand-computed below
    gates = [[TaskIdentity(f"orders_{i}", "sales"), TaskIdentity(f"ledger_{i}", "finance")] for i in range(200)]
    placed = Counter(choose_queue(g, queues) for g in gates)
    assert set(placed) == {"a", "b"}
    assert min(placed.values()) >= 70  # of 200: the parent-set hash splits ties about evenly


def routes() -> list[list[str]]:
    """Many parents of 14 projects and accounts, gates of one to three of them: each parent's queue, each
    gate's queue, each parent's queue as a gate of its own."""
    queues = ["eu", "us", "apac"]
    parents = [TaskIdentity(f"dag_{i}.task_{i}", f"team_{i % 7}", "acct" if i % 2 else "") for i in range(200)]
    gates = [[parents[i], parents[(i * 7 + 3) % 200], parents[(i * 13 + 5) % 200]][: 1 + i % 3] for i in range(200)]
    return [
        [queue_of(p, queues) for p in parents],
        [choose_queue(g, queues) for g in gates],
        [own_queue(p, queues) for p in parents],
    ]


def test_a_gates_queue_is_the_same_in_another_process_with_another_string_hash_seed():
    code = "import json\nfrom tests.unit.gating.test_trigger_queues import routes\nprint(json.dumps(routes()))\n"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    here = routes()
    assert json.loads(out.stdout) == here
    assert all(set(part) == {"eu", "us", "apac"} for part in here)  # 14 projects, 200 gates: every queue reached


def test_known_projects_keep_their_queue_from_release_to_release():
    """Worked out by hand: SHA-1 of ``project\x1faccount``, its first 8 bytes as a big-endian number, modulo
    the number of queues. A change here moves waiting gates' successors."""
    queues = ["q0", "q1", "q2", "q3"]
    listed = ["sales", "finance", "marketing", "ops", "hr", "legal"]
    assert [queue_of(TaskIdentity("orders", p), queues) for p in listed] == ["q0", "q1", "q0", "q3", "q3", "q1"]
    assert queue_of(TaskIdentity("orders", "sales", "acct"), queues) == "q2"  # the account counts
    assert queue_of(TaskIdentity("other", "sales", "", "2026-11"), queues) == "q0"  # name and partition do not


def test_a_known_tie_goes_where_the_parent_sets_hash_says_not_to_the_first_listed():
    """By hand: sales hashes to q0 and finance to q1 of four queues, a tie; the parent set
    ``ledger_close\x1ffinance\x1f\x1f`` + ``\x1e`` + ``orders_load\x1fsales\x1f\x1f`` (sorted) hashes to an odd
    number, so the second of the tied queues in the order listed."""
    sales, finance = TaskIdentity("orders_load", "sales"), TaskIdentity("ledger_close", "finance")
    assert choose_queue([sales, finance], ["q0", "q1", "q2", "q3"]) == "q1"
    assert choose_queue([finance, sales], ["q1", "q0", "q2", "q3"]) == "q0"
    # a third parent of sales: q0 has most, no tie
    assert choose_queue([sales, finance, TaskIdentity("crm_sync", "sales")], ["q0", "q1", "q2", "q3"]) == "q0"


def test_a_gate_without_parents_keeps_the_queue_its_own_task_hashed_to_in_earlier_releases():
    """By hand: SHA-1 of ``name\x1fproject\x1faccount\x1fpartition``, as every gate hashed before queues went
    by project."""
    queues = ["q0", "q1", "q2", "q3"]
    tasks = [TaskIdentity(f"orders.t{i}", "sales") for i in range(6)]
    assert [own_queue(t, queues) for t in tasks] == ["q1", "q0", "q1", "q1", "q1", "q0"]


def test_a_gate_needs_a_parent_and_a_queue():
    with pytest.raises(ValueError, match="no parent"):
        choose_queue([], ["a"])
    with pytest.raises(ValueError, match="no queue"):
        choose_queue([TaskIdentity("t", "p")], [])


class TestTheSetting:
    @pytest.mark.parametrize(
        ("text", "queues"), [("", ()), ("  ", ()), ("a", ("a",)), (" eu , us-east:1 ", ("eu", "us-east:1"))]
    )
    def test_the_setting_is_a_comma_list_of_queues_empty_for_none(self, text, queues):
        assert parse_queues(text) == queues

    @pytest.mark.parametrize(
        ("text", "wrong"),
        [("a,,b", "''"), ("eu west", "'eu west'"), ("-q", "'-q'"), ("a,a", "'a' is listed twice"), ("x" * 257, "xxx")],
    )
    def test_a_bad_entry_is_an_error_naming_the_setting(self, text, wrong):
        with pytest.raises(ConfigurationError, match=r"\[leastaction\] trigger_queues") as raised:
            parse_queues(text)
        assert wrong in str(raised.value)
