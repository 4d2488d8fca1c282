"""The demand key: only equal keys share a batch; what dbt would refuse is refused at enqueue."""

from __future__ import annotations

import pytest

from airflow_leastaction.dbt.policy import compatible
from airflow_leastaction.dbt.request_key import COMMANDS, BatchKey, canonical_vars, request_key
from airflow_leastaction.exceptions import DbtRequestError


class TestRequestKey:
    @pytest.mark.parametrize(
        "flags",
        [
            {"command": "run"},
            {"full_refresh": True},
            {"dbt_vars": {"day": "2026-11-29"}},
            {"exclude": "tag:slow"},
            {"target": "prod"},
        ],
    )
    def test_requests_that_differ_in_command_or_a_flag_never_share_a_batch(self, flags):
        plain, other = request_key("ops"), request_key("ops", **flags)
        assert not compatible(plain, other) and plain.digest != other.digest

    def test_equal_requests_share_a_batch_whatever_the_order_or_spacing_of_their_vars_and_selectors(self):
        a = request_key("ops", dbt_vars='{"b": 1, "a": [1, 2]}', exclude="tag:slow  tag:x")
        b = request_key("ops", dbt_vars={"a": [1, 2], "b": 1}, exclude=" tag:slow tag:x ")
        assert compatible(a, b) and a.digest == b.digest

    @pytest.mark.parametrize("command", ["test", "snapshot"])
    def test_full_refresh_with_a_command_that_does_not_take_it_is_refused(self, command):
        with pytest.raises(DbtRequestError, match=f"--full-refresh does not apply to dbt {command}"):
            request_key("ops", command=command, full_refresh=True)

    @pytest.mark.parametrize("command", ["build", "run", "seed"])
    def test_full_refresh_is_taken_by_build_run_and_seed(self, command):
        assert request_key("ops", command=command, full_refresh=True).dbt_args() == ["--full-refresh"]

    def test_an_unknown_command_is_refused_naming_the_ones_that_can_be_queued(self):
        with pytest.raises(DbtRequestError, match="'compile' cannot be queued; one of build, run, test"):
            request_key("ops", command="compile")

    @pytest.mark.parametrize("value", ["[1, 2]", "not json", '"text"', 3, {"": 1}])
    def test_vars_must_be_a_json_object(self, value):
        with pytest.raises(DbtRequestError, match="--vars"):
            request_key("ops", dbt_vars=value)

    def test_the_errors_exit_2_on_the_command_line(self):
        assert DbtRequestError.exit_status == 2

    def test_the_flags_reach_the_dbt_command(self):
        key = request_key("ops", command="run", full_refresh=True, dbt_vars={"day": 1}, exclude="tag:slow")
        assert key.dbt_args() == ["--full-refresh", "--vars", '{"day":1}', "--exclude", "tag:slow"]
        assert key.variables() == {"day": 1}

    def test_only_commands_that_write_are_builds_a_later_pass_may_reuse(self):
        assert {c for c in COMMANDS if BatchKey("ops", c).writes} == {"build", "run", "seed", "snapshot"}

    def test_no_vars_is_one_key(self):
        assert canonical_vars(None) == canonical_vars("") == canonical_vars({}) == ""
