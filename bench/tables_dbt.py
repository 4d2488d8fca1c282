"""The table of the state-aware dbt queue's simulated day (bench/bench_dbt_state.py) in docs/performance.md."""

from __future__ import annotations

from bench.markdown import ReportError, _table

LABELS = {
    "naive": "one `dbt build` per request",
    "dedup": "queue, every claimed model built (dedup only)",
    "state_aware": "queue, state-aware",
    "minimum": "minimum: requested models whose inputs changed",
}


def dbt_state(doc: dict, part: str | None) -> list[str]:
    if part is not None:
        raise ReportError(f"bench_dbt_state has no part {part!r}")
    r, inputs = doc["results"], doc["inputs"]
    s, verdict = r["strategies"], r["verdict"]
    state = s["state_aware"]["model_builds"]
    rows = []
    for name in ("naive", "dedup", "state_aware"):
        t = s[name]
        rows.append(
            [
                LABELS[name],
                f"{t['model_builds']:,}",
                f"{t['model_builds'] / state:.1f}x" if state else "n/a",
                f"{t['dbt_commands']:,}",
                f"{t['dbt_builds']:,}",
                f"{t['wall_s'] / 60:,.1f} min",
            ]
        )
    m = s["minimum"]
    rows.append([LABELS["minimum"], f"{m['model_builds']:,}", f"{m['model_builds'] / state:.2f}x" if state else "n/a",
                 "-", "-", "-"])  # fmt: skip
    wrong = r["wrong_decisions"]
    return [
        f"A day of {inputs['hours']} simulated hours on a generated project of {r['project']['models']} models in "
        f"{len(r['project']['layers'])} layers ({', '.join(r['project']['layers'])}) and {r['project']['sources']} "
        f"sources; {inputs['pipelines']} pipelines made {r['requests']} requests; "
        f"{inputs['share_of_sources_per_hour']:.0%} of the sources received new data each hour.",
        "",
        *_table(
            ["strategy", "model builds", "vs state-aware", "dbt commands", "of which builds", "wall time"],
            ["---", "---:", "---:", "---:", "---:", "---:"],
            rows,
        ),
        "",
        f"State-aware: {s['state_aware']['reused']:,} passes reused; "
        f"{_pct(verdict['over_minimum'])} over the minimum (goal: within 5%), "
        f"{verdict['fewer_than_dedup']}x fewer model builds than dedup only (goal: at least 3x); "
        f"models built whose inputs were unchanged: {len(wrong['built_unchanged'])}, models not built whose "
        f"inputs changed: {len(wrong['skipped_changed'])} (each pass of the history checked against the minimum). "
        f"Coarser, the requested models downstream of a source that changed since their last build: "
        f"{m['downstream_of_changes']:,}.",
    ]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"
