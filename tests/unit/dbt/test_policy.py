"""Queue policy as plain tables of cases: merge outcomes, batch compatibility, tiers, failures, results."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.dbt.planner import plan_from_listing
from airflow_leastaction.dbt.policy import (
    BatchKey,
    Candidate,
    FailureKind,
    ModelOutcome,
    Outcome,
    Settlement,
    Tier,
    TierPolicy,
    classify_failure,
    compatible,
    exclusions_key,
    merge_outcome,
    model_outcomes,
    outcome_after_upsert,
    row_status_after,
)

T0 = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)
KEY = BatchKey("prod")


class TestMergeOutcome:
    @pytest.mark.parametrize(
        "active_status, expected",
        [
            (None, Outcome.NEW_PENDING),  # No active row: create pending work.
            ("pending", Outcome.ALREADY_PENDING),  # Already pending: merge into the existing row.
            ("running", Outcome.ALREADY_RUNNING),  # Already running: mark for one follow-up pass.
        ],
    )
    def test_the_queue_handles_three_common_cases(self, active_status, expected):
        assert merge_outcome(active_status) is expected

    def test_a_finished_status_is_not_active(self):
        with pytest.raises(ValueError, match="'done' is not an active queue status"):
            merge_outcome("done")

    @pytest.mark.parametrize(
        "request_count, status, expected",
        [
            (1, "pending", Outcome.NEW_PENDING),
            (2, "pending", Outcome.ALREADY_PENDING),
            (7, "running", Outcome.ALREADY_RUNNING),
            (1, "running", Outcome.ALREADY_RUNNING),
        ],
    )
    def test_outcome_is_read_back_from_the_upserted_row(self, request_count, status, expected):
        assert outcome_after_upsert(request_count, status) is expected


class TestCompatibility:
    @pytest.mark.parametrize(
        "other, expected",
        [
            (BatchKey("prod"), True),
            (BatchKey("dev"), False),  # environment
            (BatchKey("prod", action="run"), False),  # dbt action
            (BatchKey("prod", mode="full_refresh"), False),  # scheduler mode
            (BatchKey("prod", exclusions="ephemeral,view"), False),  # exclusions
        ],
    )
    def test_models_share_a_batch_only_when_environment_action_mode_and_exclusions_match(self, other, expected):
        assert compatible(KEY, other) is expected

    @pytest.mark.parametrize(
        "given, key", [(["View"], "view"), (["view", "ephemeral", " view "], "ephemeral,view"), ([], "")]
    )
    def test_exclusions_are_canonical(self, given, key):
        assert exclusions_key(given) == key


def cand(id_, tier, waited_min=0, key=KEY, built_min_ago=None):
    built = None if built_min_ago is None else T0 - built_min_ago * MIN
    return Candidate(id_, key, tier, T0 - waited_min * MIN, built)


POLICY = TierPolicy(
    tiers=(
        Tier("fast", 30, min_interval=dt.timedelta(0), aging=5 * MIN),
        Tier("standard", 20, min_interval=5 * MIN, aging=10 * MIN),
        Tier("historical", 10, min_interval=60 * MIN, aging=10 * MIN),
    )
)


class TestTiers:
    @pytest.mark.parametrize(
        "candidates, expected_ids",
        [
            # Higher tier first.
            ([cand(1, "historical"), cand(2, "fast"), cand(3, "standard")], [2, 3, 1]),
            # Aging: a historical row that waited 3.5 hours (10 + 21) outranks a fresh fast row (30).
            ([cand(1, "fast"), cand(2, "historical", waited_min=210)], [2, 1]),
            ([cand(1, "fast"), cand(2, "historical", waited_min=190)], [1, 2]),
            # Equal priority: the oldest request first.
            ([cand(1, "fast", waited_min=1), cand(2, "fast", waited_min=2)], [2, 1]),
        ],
    )
    def test_tiers_affect_priority_and_aging_prevents_starvation(self, candidates, expected_ids):
        assert [c.id for c in POLICY.plan_batch(candidates, T0, max_size=10)] == expected_ids

    @pytest.mark.parametrize(
        "candidate, eligible",
        [
            (cand(1, "standard", built_min_ago=4), False),  # standard: 5 minutes between builds
            (cand(1, "standard", built_min_ago=5), True),
            (cand(1, "historical", built_min_ago=30), False),
            (cand(1, "fast", built_min_ago=0), True),
            (cand(1, "historical"), True),  # never built
        ],
    )
    def test_a_model_is_not_rebuilt_within_its_tiers_minimum_interval(self, candidate, eligible):
        assert bool(POLICY.plan_batch([candidate], T0, max_size=1)) is eligible

    def test_next_eligible_is_the_earliest_held_back_row(self):
        rows = [cand(1, "standard", built_min_ago=4), cand(2, "historical", built_min_ago=1)]
        assert POLICY.next_eligible(rows, T0) == T0 + MIN

    def test_the_batch_takes_only_rows_compatible_with_the_most_urgent(self):
        rows = [
            cand(1, "fast", key=BatchKey("prod", mode="full_refresh")),
            cand(2, "standard"),
            cand(3, "historical"),
        ]
        assert [c.id for c in POLICY.plan_batch(rows, T0, max_size=10)] == [1]
        assert [c.id for c in POLICY.plan_batch(rows[1:], T0, max_size=1)] == [2]

    @pytest.mark.parametrize(
        "unique_id, meta, mapping, expected",
        [
            ("model.p.dim", {"tier": "fast"}, {}, "fast"),
            ("model.p.dim", {"tier": "fast"}, {"dim": "historical"}, "historical"),  # mapping wins
            ("model.p.dim", {"tier": "platinum"}, {}, "standard"),  # unknown tier: the default
            ("model.p.dim", None, {"model.p.dim": "fast"}, "fast"),
        ],
    )
    def test_tier_comes_from_the_mapping_then_meta_then_the_default(self, unique_id, meta, mapping, expected):
        policy = TierPolicy(mapping=mapping)
        assert policy.tier_for(unique_id, unique_id.rsplit(".", 1)[1], meta) == expected

    def test_a_mapping_to_an_unknown_tier_is_rejected(self):
        with pytest.raises(ValueError, match=r"unknown tiers \['gold'\]"):
            TierPolicy(mapping={"dim": "gold"})


class TestFailures:
    @pytest.mark.parametrize(
        "message, kind",
        [
            (
                'IO Error: Could not set lock on file "/data/w.duckdb": Conflicting lock is held',
                FailureKind.CONFLICT,
            ),
            ("io.delta.exceptions.ConcurrentAppendException: Files were added", FailureKind.CONFLICT),
            (
                "MetadataChangedException: The metadata of the Delta table has been changed",
                FailureKind.CONFLICT,
            ),
            ('Binder Error: Referenced column "hours" not found', FailureKind.OTHER),
            ("", FailureKind.OTHER),
        ],
    )
    def test_failures_are_classified_before_recovery(self, message, kind):
        assert classify_failure([message]) is kind


class TestModelOutcomes:
    STATUSES = {
        "model.p.ok": "success",
        "model.p.tested": "success",
        "test.p.t1": "fail",
        "model.p.broken": "error",
        "model.p.child": "skipped",
        "model.p.warned": "success",
        "test.p.t2": "warn",
    }
    TESTS = {"model.p.tested": ["test.p.t1"], "model.p.warned": ["test.p.t2"]}

    @pytest.mark.parametrize(
        "model, outcome",
        [
            ("model.p.ok", ModelOutcome.SUCCESS),
            ("model.p.tested", ModelOutcome.TEST_FAILED),  # its own test failed
            ("model.p.warned", ModelOutcome.SUCCESS),  # a warning is not a failure
            ("model.p.broken", ModelOutcome.ERROR),
            ("model.p.child", ModelOutcome.UPSTREAM_FAILED),
            ("model.p.never", ModelOutcome.NOT_RUN),
        ],
    )
    def test_each_model_is_judged_from_dbts_node_results(self, model, outcome):
        assert model_outcomes([model], self.STATUSES, self.TESTS)[model] is outcome

    @pytest.mark.parametrize(
        "outcome, dirty, attempts, status, follow_up",
        [
            (ModelOutcome.SUCCESS, False, 1, "done", False),  # a clean row leaves the active queue
            (ModelOutcome.SUCCESS, True, 1, "done", True),  # a dirty row's build is history; one more pass owed
            (ModelOutcome.TEST_FAILED, False, 1, "failed", False),
            (ModelOutcome.TEST_FAILED, True, 1, "failed", True),
            (ModelOutcome.ERROR, True, 1, "failed", True),  # a failure stays a failure, new data or not
            (ModelOutcome.UPSTREAM_FAILED, False, 1, "failed", False),
            (ModelOutcome.UPSTREAM_FAILED, True, 1, "failed", True),
            (ModelOutcome.NOT_RUN, False, 1, "pending", False),  # whatever did not finish goes back
            (ModelOutcome.NOT_RUN, True, 1, "pending", False),  # ... and its next pass sees the new data
            (ModelOutcome.NOT_RUN, False, 3, "failed", False),  # ... until it has failed to finish 3 times
            (ModelOutcome.NOT_RUN, True, 3, "failed", True),
        ],
    )
    def test_row_status_after_a_batch(self, outcome, dirty, attempts, status, follow_up):
        assert row_status_after(outcome, dirty, attempts, max_attempts=3) == Settlement(status, follow_up)

    @pytest.mark.parametrize("outcome", [o for o in ModelOutcome if o is not ModelOutcome.SUCCESS])
    @pytest.mark.parametrize("dirty", [False, True])
    def test_a_model_that_did_not_succeed_is_never_settled_done(self, outcome, dirty):
        assert row_status_after(outcome, dirty, 3, max_attempts=3).status != "done"


class TestPlanFromListing:
    LISTING = [
        {
            "unique_id": "model.p.stg",
            "name": "stg",
            "fqn": ["p", "staging", "stg"],
            "config": {"materialized": "view", "meta": {}},
        },
        {
            "unique_id": "model.p.dim",
            "name": "dim",
            "fqn": ["p", "marts", "dim"],
            "config": {"materialized": "table", "meta": {"tier": "fast"}},
        },
        {
            "unique_id": "model.p.inc",
            "name": "inc",
            "fqn": ["p", "marts", "inc"],
            "config": {"materialized": "incremental", "meta": {}},
        },
    ]

    def test_views_are_excluded_by_default(self):
        plan = plan_from_listing("source:p.raw+", self.LISTING, ["view"], TierPolicy())
        assert [(m.fqn, m.tier) for m in plan.models] == [
            ("p.marts.dim", "fast"),
            ("p.marts.inc", "standard"),
        ]
        assert [m.unique_id for m in plan.excluded] == ["model.p.stg"]

    def test_exclusions_are_configurable(self):
        plan = plan_from_listing("source:p.raw+", self.LISTING, ["incremental"], TierPolicy())
        assert [m.name for m in plan.models] == ["dim", "stg"]

    def test_a_selector_resolving_only_to_views_is_a_successful_no_op(self):
        plan = plan_from_listing("source:p.raw+", self.LISTING[:1], ["view"], TierPolicy())
        assert plan.is_noop and not plan.models
