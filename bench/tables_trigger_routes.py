"""The tables of the several-triggerer benchmark (:mod:`bench.bench_trigger_routes`) in docs/performance.md:
the layouts, per process, the goals, and the estimate for a larger deployment."""

from __future__ import annotations

from bench.markdown import ReportError, _table
from bench.trigger_layouts import LAYOUTS
from bench.trigger_route_figures import (
    ONE_CORE_GOAL_S,
    RATIO_GOAL,
    STEADY_P99_GOAL_S,
    layout_figures,
)

SCENARIO = {"one_transaction": "(a) one transaction", "steady": "(b) steady"}


def _s(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def trigger_routes(doc: dict, part: str | None) -> list[str]:
    parts = {None: _per_process, "layouts": _layouts, "goals": _goals, "estimate": _estimate}
    if part not in parts:
        raise ReportError(f"bench_trigger_routes.json has no part {part!r} (known: layouts, goals, estimate)")
    return parts[part](doc)


def _layouts(doc: dict) -> list[str]:
    i, layouts = doc["inputs"], doc["layouts"]
    rows = []
    for name in LAYOUTS:
        lay = layouts[name]
        w = lay["watched_parents"]
        share = lay.get("all_parents_in_own_queue", lay.get("all_parents_in_own_team"))
        rows.append([name, f"{min(w):,} to {max(w):,}", "n/a" if share is None else f"{share:.0%}"])
    head = (
        f"{i['k']:,} gates over {i['processes']} triggerer processes, waiting on {i['parents']:,} parents of "
        f"{i['teams']} teams; steady: {i['rate_per_min']:,.0f} parents per minute for {i['window_s']:.0f} s."
    )
    header = ["layout", "parents watched per process", "gates with every parent in their queue (team)"]
    return [head, "", *_table(header, ["---", "---:", "---:"], rows)]


def _per_process(doc: dict) -> list[str]:
    rows = []
    for run in doc["results"]:
        for n, f in enumerate(layout_figures(run)):
            rows.append(
                [
                    SCENARIO[run["scenario"]],
                    run["layout"],
                    f"{n + 1}",
                    f"{f['gates']:,}",
                    f"{f['released']:,}",
                    f"{f['rows_read']:,.0f}",
                    f"{f['parents_judged']:,.0f}",
                    f"{f['cpu_s']:.2f}",
                    _s(f["release_median_s"]),
                    _s(f["release_p99_s"]),
                ]
            )
    header = "release|layout|process|gates in it|released|rows read|parents judged|CPU s|median (s)|p99 (s)"
    return [
        "(a): per release (every parent in one transaction). (b): per 1,000 parents completed (one minute);"
        " latencies of the gates released in the window. Processes numbered in the order they reported.",
        "",
        *_table(header.split("|"), ["---", "---", "---:"] + ["---:"] * 7, rows),
    ]


def _goals(doc: dict) -> list[str]:
    rows = []
    ratios = doc["derived"]["ratios"]
    for scenario, by_layout in ratios.items():
        for layout, r in by_layout.items():
            for key, label in (("rows_read", "rows read"), ("parents_judged", "parents judged"), ("cpu_s", "CPU")):
                v = r[key]
                met = "n/a" if v is None else ("met" if v <= RATIO_GOAL else "not met")
                rows.append(
                    [f"{SCENARIO[scenario]}: {layout} / today, {label} (busiest process)", _s(v), "≤ 0.33", met]
                )
    for run in doc["results"]:
        figs = layout_figures(run)
        p99 = max((f["release_p99_s"] or 0.0) for f in figs)
        if run["scenario"] == "steady":
            met = "met" if p99 <= STEADY_P99_GOAL_S else "not met"
            rows.append([f"(b) steady: {run['layout']}, release p99 (worst process), s", _s(p99), "≤ 1.5", met])
        else:
            rows.append(
                [f"(a) one transaction: {run['layout']}, release p99 (worst process), s", _s(p99), "measured", ""]
            )
            core = max(f["cpu_s"] for f in figs)
            met = "met" if core <= ONE_CORE_GOAL_S else "not met"
            rows.append([f"(a) one transaction: {run['layout']}, one core per triggerer, s", _s(core), "≤ 4", met])
    return _table(["figure", "measured", "goal", ""], ["---", "---:", "---:", "---"], rows)


def _estimate(doc: dict) -> list[str]:
    d = doc["derived"]
    e, c = d["estimate"], d["costs"]
    head = (
        f"{e['gates']:,} gates over {e['triggerers']} triggerers waiting on {e['parents']:,} parents (the same"
        f" generator), from the costs measured above: {c['cpu_s_per_gate'] * 1e6:,.0f} µs of triggerer CPU per"
        f" released gate and {c['cpu_s_per_parent'] * 1e6:,.0f} µs per judged parent (fitted over the (a)"
        f" releases), {c['rows_per_judged_parent']:.2f} rows read per judged parent at"
        f" {c['statement_s_per_row'] * 1e6:,.0f} µs of statement time each, and an idle tick of"
        f" {c['idle_cpu_ms_per_tick']:.1f} ms CPU and {c['idle_statements_per_tick']:.0f} statement of"
        f" {c['idle_statement_ms_per_tick']:.2f} ms per triggerer; a tick while parents complete steadily costs"
        f" {c['steady_cpu_ms_per_tick']:.1f} ms CPU beyond its releases. {e['all_parents_in_own_queue']:.0%} of"
        " the gates have every parent in the queue they are routed to."
    )
    rows = []
    fields = (
        ("tick_triggerer_cpu_ms", "idle tick: CPU per triggerer (ms)", "{:,.1f}"),
        ("tick_catalog_statements", "idle tick: catalog statements, all triggerers", "{:,.0f}"),
        ("tick_catalog_ms", "idle tick: catalog statement time, all triggerers (ms)", "{:,.1f}"),
        ("release_triggerer_cpu_s", "release (a): CPU of the busiest triggerer (s)", "{:,.2f}"),
        ("release_triggerer_rows", "release (a): rows read by the busiest triggerer", "{:,.0f}"),
        ("release_catalog_rows", "release (a): rows read from the catalog, all triggerers", "{:,.0f}"),
        ("release_catalog_s", "release (a): catalog statement time, all triggerers (s)", "{:,.1f}"),
        ("steady_triggerer_parents_per_min", "steady (b): parents judged per minute, busiest triggerer", "{:,.0f}"),
        ("steady_triggerer_cpu_s_per_min", "steady (b): CPU per minute, busiest triggerer (s)", "{:,.2f}"),
    )
    layouts = list(LAYOUTS)
    for key, label, fmt in fields:
        rows.append([label, *(fmt.format(e[name][key]) for name in layouts)])
    return [head, "", *_table(["per", *layouts], ["---", *("---:" for _ in layouts)], rows)]
