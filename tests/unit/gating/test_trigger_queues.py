"""Which triggerer queue a gate waits in: the parents' stable hash into ``[leastaction] trigger_queues``, the
queue most of them hash to, ties to the queue listed first."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.trigger_queues import choose_queue, parse_queues, queue_of
from airflow_leastaction.identity import TaskIdentity

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12).filter(str.strip)
identities = st.builds(TaskIdentity, name=names, project=names, account=st.sampled_from(["", "acct"]))
queue_lists = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=6, unique=True)


def oracle(parents, queues) -> str:
    """From the rule's words: count, per listed queue, the parents that hash there; the queue with the most
    wins, and of equals the one listed first."""
    best, best_count = None, -1
    for q in queues:
        count = sum(1 for p in set(parents) if queue_of(p, queues) == q)
        if count > best_count:
            best, best_count = q, count
    return best


@given(parents=st.lists(identities, min_size=1, max_size=12), queues=queue_lists)
def test_a_gate_goes_where_most_of_its_parents_hash_ties_to_the_first_listed(parents, queues):
    chosen = choose_queue(parents, queues)
    assert chosen in queues
    assert chosen == oracle(parents, queues)


@given(parents=st.lists(identities, min_size=1, max_size=12), queues=queue_lists, data=st.data())
def test_the_order_and_repetition_of_the_parents_do_not_change_the_queue(parents, queues, data):
    shuffled = data.draw(st.permutations(parents + parents[:1]))
    assert choose_queue(shuffled, queues) == choose_queue(parents, queues)


@given(parent=identities, queues=queue_lists)
def test_every_parent_hashes_into_the_list(parent, queues):
    assert queue_of(parent, queues) in queues


def test_the_hash_is_the_same_in_another_process_with_another_string_hash_seed():
    parents = [TaskIdentity(f"dag_{i}.task_{i}", "sales", "acct" if i % 2 else "", "") for i in range(200)]
    queues = ["eu", "us", "apac"]
    here = [queue_of(p, queues) for p in parents]
    code = (
        "import json,sys\n"
        "from airflow_leastaction.identity import TaskIdentity\n"
        "from airflow_leastaction.gating.trigger_queues import queue_of\n"
        "ps=[TaskIdentity(f'dag_{i}.task_{i}','sales','acct' if i%2 else '','') for i in range(200)]\n"
        "print(json.dumps([queue_of(p,['eu','us','apac']) for p in ps]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
    assert set(here) == set(queues)  # 200 parents reach every queue: the hash spreads


def test_known_parents_keep_their_queue_from_release_to_release():
    """Worked out by hand: SHA-1 of ``name\x1fproject\x1faccount\x1fpartition``, its first 8 bytes as a
    big-endian number, modulo the number of queues. A change here moves waiting gates' successors."""
    queues = ["q0", "q1", "q2", "q3"]
    assert [queue_of(TaskIdentity(f"orders.t{i}", "sales"), queues) for i in range(6)] == KNOWN


KNOWN = ["q1", "q0", "q1", "q1", "q1", "q0"]


def test_a_gate_whose_parents_span_queues_goes_to_the_queue_of_most():
    queues = ["a", "b"]
    pool = [TaskIdentity(f"p{i}", "x") for i in range(40)]
    in_a = [p for p in pool if queue_of(p, queues) == "a"][:2]
    in_b = [p for p in pool if queue_of(p, queues) == "b"][:1]
    assert choose_queue(in_b + in_a, queues) == "a"
    assert choose_queue(in_a[:1] + in_b, queues) == "a"  # a tie: the queue listed first
    assert choose_queue(in_a[:1] + in_b, ["b", "a"]) == "b"


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
