"""The figures of the several-triggerer benchmark, derived from its raw samples (the console, the JSON's
derived section and docs/performance.md use these): per process and layout, per release; routed against
today; and the 1,000,000-gate estimate from the measured per-gate and per-parent costs."""

from __future__ import annotations

import statistics

from bench.trigger_layouts import LAYOUTS

#: The issue's goals: routed per-process work at most this share of today's; release p99 bounds (s).
RATIO_GOAL = 1 / 3
STEADY_P99_GOAL_S = 1.5
ONE_CORE_GOAL_S = 4.0


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The value at quantile ``q`` of ``sorted_values`` (nearest rank below), None for no values."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def per_process(run: dict, scenario: str, parents_completed: int) -> dict:
    """One process's figures. One transaction: per release (the whole release is one). Steady: per 1,000
    parents completed (a minute at 1,000 per minute)."""
    scale = 1.0 if scenario == "one_transaction" else 1000 / parents_completed
    lat = run["release_s"]
    ticks = run["ticks"]
    return {
        "gates": run["gates"],
        "released": len(lat),
        "not_released": run["not_released"],
        "rows_read": run["rows"] * scale,
        "parents_judged": run["parents_judged"] * scale,
        "cpu_s": run["cpu_s"] * scale,
        "statement_s": run["statement_s"] * scale,
        "release_median_s": statistics.median(lat) if lat else None,
        "release_p99_s": percentile(lat, 0.99),
        "idle_cpu_ms_per_tick": statistics.median(t["cpu_ms"] for t in ticks),
        "idle_statements_per_tick": statistics.median(t["statements"] for t in ticks),
        "idle_statement_ms_per_tick": statistics.median(t["statement_ms"] for t in ticks),
    }


def layout_figures(result: dict) -> list[dict]:
    return [per_process(r, result["scenario"], result["parents_completed"]) for r in result["processes"]]


def ratios(today: list[dict], routed: list[dict]) -> dict:
    """Routed against today, for the busiest process of each (the triggerer that sets the release time)."""
    out = {}
    for key in ("rows_read", "parents_judged", "cpu_s"):
        worst_today = max(p[key] for p in today)
        out[key] = max(p[key] for p in routed) / worst_today if worst_today else None
    return out


def fit_costs(points: list[tuple[float, float, float]]) -> dict:
    """CPU seconds = per_gate * gates + per_parent * parents, least squares through the origin over
    ``points`` of (gates released, parents judged, CPU seconds). A negative coefficient (the parents'
    share lost in the noise) is taken as 0 and the other fitted alone."""
    sgg = sum(g * g for g, _, _ in points)
    spp = sum(p * p for _, p, _ in points)
    sgp = sum(g * p for g, p, _ in points)
    sgc = sum(g * c for g, _, c in points)
    spc = sum(p * c for _, p, c in points)
    det = sgg * spp - sgp * sgp
    a = (sgc * spp - spc * sgp) / det if det else -1.0
    b = (spc * sgg - sgc * sgp) / det if det else -1.0
    if a < 0 or b < 0:
        a, b = (sgc / sgg, 0.0) if sgg else (0.0, spc / spp if spp else 0.0)
    return {"cpu_s_per_gate": a, "cpu_s_per_parent": b}


def costs(doc: dict) -> dict:
    """The measured unit costs: CPU per released gate and per judged parent (one-transaction releases),
    catalog statement time per row read, a triggerer's idle tick."""
    points, rows, seconds, idle, steady = [], 0, 0.0, [], []
    for result in doc["runs"]:
        for fig, raw in zip(layout_figures(result), result["processes"], strict=True):
            idle.append(fig)
            if result["scenario"] == "one_transaction":
                points.append((fig["released"], fig["parents_judged"], fig["cpu_s"]))
                rows += raw["rows"]
                seconds += raw["statement_s"]
            else:
                steady.append(raw)
    fitted = fit_costs(points)
    judged = sum(p for _, p, _ in points)
    return {
        **fitted,
        "steady_cpu_ms_per_tick": steady_tick_ms(steady, fitted, doc["poll_interval_s"]) if steady else None,
        "statement_s_per_row": seconds / rows if rows else 0.0,
        "rows_per_judged_parent": rows / judged if judged else 0.0,
        "idle_cpu_ms_per_tick": statistics.median(f["idle_cpu_ms_per_tick"] for f in idle),
        "idle_statements_per_tick": statistics.median(f["idle_statements_per_tick"] for f in idle),
        "idle_statement_ms_per_tick": statistics.median(f["idle_statement_ms_per_tick"] for f in idle),
    }


def steady_tick_ms(runs: list[dict], fitted: dict, poll_interval_s: float) -> float:
    """CPU ms per tick of a triggerer while parents complete steadily, beyond its releases and judged
    parents (the tick's statements and bookkeeping): the median over ``runs`` (raw steady processes)."""
    return statistics.median(
        1000
        * (
            r["cpu_s"]
            - fitted["cpu_s_per_gate"] * len(r["release_s"])
            - fitted["cpu_s_per_parent"] * r["parents_judged"]
        )
        / (r["window_s"] / poll_interval_s)
        for r in runs
    )


def estimate(unit: dict, structure: dict, poll_interval_s: float, rate_per_min: float) -> dict:
    """What ``structure["triggerers"]`` triggerers and the catalog spend per idle tick and per release, for
    each layout: ``structure[layout]`` is the busiest triggerer's gates and watched parents, and the
    parents watched in all triggerers together."""
    n = structure["triggerers"]
    out = {k: structure[k] for k in ("triggerers", "gates", "parents", "all_parents_in_own_queue") if k in structure}
    for layout in LAYOUTS:
        s = structure[layout]
        rows_one = s["watched_max"] * unit["rows_per_judged_parent"]
        rows_all = s["watched_total"] * unit["rows_per_judged_parent"]
        share = s["watched_max"] / structure["parents"]
        out[layout] = {
            "tick_triggerer_cpu_ms": unit["idle_cpu_ms_per_tick"],
            "tick_catalog_statements": n * unit["idle_statements_per_tick"],
            "tick_catalog_ms": n * unit["idle_statement_ms_per_tick"],
            "tick_catalog_ms_per_s": n * unit["idle_statement_ms_per_tick"] / poll_interval_s,
            "release_triggerer_cpu_s": unit["cpu_s_per_gate"] * s["gates_max"]
            + unit["cpu_s_per_parent"] * s["watched_max"],
            "release_triggerer_rows": rows_one,
            "release_catalog_rows": rows_all,
            "release_catalog_s": rows_all * unit["statement_s_per_row"],
            "steady_triggerer_parents_per_min": rate_per_min * share,
            "steady_triggerer_cpu_s_per_min": (unit["steady_cpu_ms_per_tick"] or 0.0) / 1000 * 60 / poll_interval_s
            + unit["cpu_s_per_parent"] * rate_per_min * share
            + unit["cpu_s_per_gate"] * rate_per_min * s["gates_max"] / structure["parents"],
        }
    return out


def structure_of(gates, processes: int) -> dict:
    """The busiest process's gates and watched parents, and all processes' watched parents, per layout;
    and the share of gates routed with every parent in their queue."""
    from bench.trigger_layouts import own_queue_share, place, watched

    out = {"triggerers": processes, "gates": len(gates.gates), "parents": len(gates.parents)}
    for layout in LAYOUTS:
        placement = place(gates, processes, layout)
        if layout == "routed":
            out["all_parents_in_own_queue"] = own_queue_share(gates, processes, placement)
        counts = [0] * processes
        for n in placement:
            counts[n] += 1
        seen = watched(gates, placement, processes)
        out[layout] = {"gates_max": max(counts), "watched_max": max(seen), "watched_total": sum(seen)}
    return out
