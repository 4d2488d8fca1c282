"""The table of the run-states benchmark (:mod:`bench.bench_run_states`) in docs/performance.md."""

from __future__ import annotations

from bench.markdown import ReportError, _table

MODES = {
    "reads": "`reads`: the gates' shared read alone (nothing judging)",
    "shared": "`shared`: one question per DAG per tick for the gates, one for the run outcomes",
    "per_gate": "`per_gate`: each gate and each run outcome asking for its own run (before)",
}


def run_states(doc: dict, part: str | None) -> list[str]:
    from bench.bench_run_states import derived

    if part is not None:
        raise ReportError(f"bench_run_states has no table {part!r}")
    rows = []
    for r in doc["results"]:
        d = derived(r)
        release = f"{d['release_median_s']:.2f} / {d['release_max_s']:.2f}" if d["release_median_s"] is not None else ""
        rows.append(
            [
                f"{r['k']:,}",
                str(r["runs"]),
                MODES[r["mode"]],
                f"{d['questions_per_tick']:,.1f}",
                f"{d['cpu_ms_per_tick']:,.1f}",
                f"{d['tick_s']:.2f}",
                release,
            ]
        )
    return _table(
        [
            "K gates",
            "runs",
            "",
            "questions to Airflow per tick",
            "CPU ms per tick",
            "tick length, mean (s)",
            "release median / max (s)",
        ],
        ["---:", "---:", "---", "---:", "---:", "---:", "---:"],
        rows,
    )
