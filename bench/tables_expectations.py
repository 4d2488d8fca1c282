"""The tables of the expected-times benchmark (:mod:`bench.bench_expectations`) in docs/performance.md."""

from __future__ import annotations

from bench.markdown import ReportError, _table

VARIANTS = (
    ("backtest", "recent runs (the estimate's history)"),
    ("what_if_same_kind_of_day", "what if: runs of the same kind of day only"),
)


#: The rules a warning is replayed by: its column of the warning rows, and how a table names it.
RULES = (
    ("lead_min", "expected p90 past the deadline"),
    ("median_lead_min", "expected median past the deadline"),
    ("chance30_lead_min", "chance of missing 30% or more"),
    ("chance50_lead_min", "chance of missing 50% or more"),
    ("chance70_lead_min", "chance of missing 70% or more"),
    ("gate_lead_min", "the gate's rule: 90% at once, 50% at its last call, none within 30 min (the default)"),
)
#: The thresholds the best possible rule (the generator's own chance, read at deadline - 30 min) is shown at.
BOUND_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.9)


def expectations(doc: dict, part: str | None) -> list[str]:
    results = doc["results"]
    if part == "errors":
        return _errors(doc)
    if part == "warnings":
        return _warnings(doc)
    if part == "margins":
        return _margins(doc)
    if part == "bound":
        return _bound(doc)
    if part == "speed":
        if "speed" not in results:
            raise ReportError("bench_expectations:speed: the JSON has no speed part (--parts speed)")
        return _speed(doc)
    raise ReportError(f"bench_expectations has no table {part!r}")


def _backtest(doc: dict) -> dict:
    if "backtest" not in doc["results"]:
        raise ReportError("bench_expectations: the JSON has no backtest part (--parts backtest)")
    return doc["results"]["backtest"]


def _world_line(doc: dict) -> str:
    w, i = _backtest(doc)["world"], doc["inputs"]
    return (
        f"{w['tasks']} catalog tasks: {w['dags']} DAGs ({w['daily_tasks'] - w['outside_loads']} daily tasks), "
        f"{w['outside_loads']} outside daily loads and {w['hourly_feeds']} hourly feeds; {i['days']} days of "
        f"history ({w['slot_records']:,} slot records, seed {i['seed']}), the last {i['replay_days']} replayed. "
        f"Incidents in the replayed days: an outside load two hours late, {w['incidents_replayed']['late']}; "
        f"a task failed and run again by hand, {w['incidents_replayed']['rerun']}."
    )


def _errors(doc: dict) -> list[str]:
    from bench.bench_expectations import HORIZONS
    from tests.helpers.expectation_replay import error_summary

    rows = []
    for name, label in VARIANTS:
        if name not in doc["results"]:
            continue
        for h in HORIZONS:
            s = error_summary(doc["results"][name]["errors"][str(h)])
            rows.append(
                [
                    f"{h} min before",
                    label,
                    f"{s['targets'] - s['no_estimate']:,}",
                    f"{s['no_estimate']:,}",
                    f"{s['median_min']:.1f}",
                    f"{s['p90_min']:.1f}",
                    f"{s['within_p90']:.0%}",
                ]
            )
    header = ["asked", "history", "estimates", "no estimate", "median error (min)", "p90 error (min)",
              "done by the expected p90"]  # fmt: skip
    return [_world_line(doc), "", *_table(header, ["---", "---", "---:", "---:", "---:", "---:", "---:"], rows)]


def _warnings(doc: dict) -> list[str]:
    from tests.helpers.expectation_replay import AHEAD_MIN, false_warning_classes, warning_summary

    found = _backtest(doc)["warnings"]
    rules = [(lead, label) for lead, label in RULES if lead in _backtest(doc)["warning_columns"]]
    rows = [_warning_row(label, warning_summary(found, lead)) for lead, label in rules]
    missed = warning_summary(found)["missed"]
    rows.append(["Airflow `DeadlineAlert`: at the deadline", f"{missed:,}", f"0 ({0:.0%})", "0", "0",
                 f"{missed:,}", "0 (0%)"])  # fmt: skip
    if "what_if_same_kind_of_day" in doc["results"]:
        what_if = doc["results"]["what_if_same_kind_of_day"]["warnings"]
        rows.append(_warning_row("expected p90 past the deadline; runs of the same kind of day only",
                                 warning_summary(what_if)))  # fmt: skip
    s = warning_summary(found)
    header = ["warned when", "missed deadlines", f"warned {AHEAD_MIN}+ min ahead", "lead median (min)",
              "lead p10 (min)", "warnings", "false warnings"]  # fmt: skip
    classes = [
        [label.removesuffix(" (the default)"), *_classes(false_warning_classes(found, lead))]
        for lead, label in rules
        if lead in ("lead_min", "chance50_lead_min", "gate_lead_min")
    ]
    return [
        f"{s['targets']:,} deadlines (daily task × replayed day), {s['missed']:,} missed, "
        f"{s['missed_after_incident']:,} of them on a morning with an incident upstream. Missed deadlines by "
        f"the day the run fell on: {_by_day(found)}.",
        "",
        *_table(header, ["---", "---:", "---:", "---:", "---:", "---:", "---:"], rows),
        "",
        "The false warnings, by how much the deadline was then met by, the kind of day, and the cause (an "
        "incident upstream; the estimate through the parents while the task's own p90 was within its deadline; "
        "else the task's own history, its jitter and duration):",
        "",
        *_table(
            [
                "rule",
                "false",
                "met by 0-15 min",
                "15-30",
                "30-60",
                "60+",
                "Monday",
                "Tue-Fri",
                "weekend",
                "incident",
                "parents",
                "own history",
            ],  # fmt: skip
            ["---", *("---:" for _ in range(11))],
            classes,
        ),
    ]


def _classes(c: dict) -> list[str]:
    slack = [c["slack_min"].get(k, 0) for k in ("0-15", "15-30", "30-60", "60+")]
    kind = [c["kind_of_day"][k] for k in ("monday", "weekday", "weekend")]
    cause = [c["cause"].get(k, 0) for k in ("incident", "parents", "own history")]
    return [f"{n:,}" for n in (c["false"], *slack, *kind, *cause)]


def _margins(doc: dict) -> list[str]:
    from tests.helpers.expectation_replay import warning_summary

    bt = _backtest(doc)
    margins = doc["inputs"].get("margins", "15").split(",")
    sets = {margins[0]: bt["warnings"], **bt.get("margin_sweep", {})}
    rows = []
    for margin in margins:
        for lead, label in (RULES[0], RULES[3], RULES[5]):
            s = warning_summary(sets[margin], lead)
            share = s["warned_ahead"] / s["missed"] if s["missed"] else 0
            false = s["false"] / s["warnings"] if s["warnings"] else 0
            published = " (published)" if margin == margins[0] else ""
            ahead, wrong = f"{s['warned_ahead']:,} ({share:.0%})", f"{s['false']:,} ({false:.0%})"
            rows.append(
                [f"p90 + {margin} min{published}", label, f"{s['missed']:,}", ahead, f"{s['warnings']:,}", wrong]
            )
    return _table(
        [
            "deadline: 4-week p90 of completions +",
            "warned when",
            "missed deadlines",
            "warned 30+ min ahead",
            "warnings",
            "false warnings",
        ],  # fmt: skip
        ["---", "---", "---:", "---:", "---:", "---:"],
        rows,
    )


def _bound(doc: dict) -> list[str]:
    """The best any rule could do on the replayed mornings (:mod:`bench.expectation_oracle`), beside the
    gate's rule."""
    from tests.helpers.expectation_replay import AHEAD_MIN, warning_summary

    bound = doc["results"].get("bound")
    if bound is None:
        raise ReportError("bench_expectations:bound: the JSON has no bound part (--bound)")
    rows = bound["rows"]  # [task, day, missed, chance at deadline - 30 min (None: done by then)]
    missed = sum(1 for r in rows if r[2])
    table = []
    for threshold in BOUND_THRESHOLDS:
        ahead = sum(1 for r in rows if r[2] and r[3] is not None and r[3] >= threshold)
        false = sum(1 for r in rows if not r[2] and r[3] is not None and r[3] >= threshold)
        warned = missed + false
        table.append([f"the generator's chance at the deadline - {AHEAD_MIN} min, {threshold:.0%} or more",
                      f"{missed:,}", f"{ahead:,} ({ahead / missed:.0%})" if missed else "0",
                      f"{warned:,}", f"{false:,} ({false / warned:.0%})" if warned else "0"])  # fmt: skip
    s = warning_summary(_backtest(doc)["warnings"], "gate_lead_min")
    share = s["warned_ahead"] / s["missed"] if s["missed"] else 0
    table.append([RULES[5][1], f"{s['missed']:,}", f"{s['warned_ahead']:,} ({share:.0%})", f"{s['warnings']:,}",
                  f"{s['false']:,} ({s['false'] / s['warnings']:.0%})" if s["warnings"] else "0"])  # fmt: skip
    return [
        f"{len(rows):,} deadlines, {missed:,} missed; {bound['samples']:,} futures drawn at each deadline - "
        f"{AHEAD_MIN} min.",
        "",
        *_table(
            ["warned when", "missed deadlines", f"warned {AHEAD_MIN}+ min ahead", "warnings", "false warnings"],
            ["---", "---:", "---:", "---:", "---:"],
            table,
        ),  # fmt: skip
    ]


def _by_day(rows: list[list]) -> str:
    from tests.helpers.expectation_replay import WARNING_COLUMNS, kind_of_day
    from tests.helpers.expected_times import DAY, EPOCH

    col = {c: i for i, c in enumerate(WARNING_COLUMNS)}
    count = {"monday": 0, "weekday": 0, "weekend": 0}
    for r in rows:
        if r[col["missed"]]:
            count[kind_of_day(EPOCH + r[col["day"]] * DAY, hourly=False)] += 1
    return f"Monday {count['monday']:,}, Tuesday to Friday {count['weekday']:,}, the weekend {count['weekend']:,}"


def _warning_row(label: str, s: dict) -> list[str]:
    share = s["warned_ahead"] / s["missed"] if s["missed"] else 0
    false = s["false"] / s["warnings"] if s["warnings"] else 0
    return [
        label,
        f"{s['missed']:,}",
        f"{s['warned_ahead']:,} ({share:.0%})",
        "—" if s["lead_median_min"] is None else str(round(s["lead_median_min"])),
        "—" if s["lead_p10_min"] is None else str(round(s["lead_p10_min"])),
        f"{s['warnings']:,}",
        f"{s['false']:,} ({false:.0%})",
    ]


def _load(sp: dict) -> str:
    """The load average as the timings began (not in older runs)."""
    load = sp.get("load_average_at_start")
    return "" if load is None else f" Load average {load[0]:.1f} as the timings began."


def _speed(doc: dict) -> list[str]:
    from tests.helpers.expectation_replay import nearest_rank

    sp = doc["results"]["speed"]
    pure, cat = sp["pure"], sp["catalog"]

    def row(label: str, samples: list[float]) -> list[str]:
        ms = [s * 1000 for s in samples]
        return [label, f"{len(ms)}", f"{nearest_rank(ms, 0.5):,.0f}", f"{nearest_rank(ms, 0.9):,.0f}",
                f"{min(ms):,.0f} to {max(ms):,.0f}"]  # fmt: skip

    return [
        f"{sp['tasks']:,} catalog tasks in chains and fans, {sp['history_days']} days of history "
        f"({cat['slot_records']:,} slot records, loaded in {cat['load_s']:.1f} s); asked an hour before the first "
        f"interval of the last day ends, when all {pure['nodes']:,} slots wait. The catalog's answers equal the "
        f"pure pass's for {cat['equal_to_pure']:,} of {cat['targets']:,} slots.{_load(sp)}",
        "",
        *_table(
            ["pass", "runs", "median (ms)", "p90 (ms)", "min to max (ms)"],
            ["---", "---:", "---:", "---:", "---:"],
            [
                row(f"`expect()` on {pure['nodes']:,} waiting nodes", pure["seconds"]),
                *(
                    [
                        row(
                            f"the quantiles of {pure['histories']:,} histories (once per catalog change)",
                            pure["quantiles_s"],
                        )
                    ]
                    if "quantiles_s" in pure
                    else []
                ),
                row("`expectations_for` on SQLite, cold (history cache emptied)", cat["cold_s"]),
                row("`expectations_for` on SQLite, cached (nothing written since)", cat["cached_s"]),
            ],
        ),
    ]
