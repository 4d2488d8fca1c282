"""The tables of docs/performance.md, one renderer per benchmark: each turns a benchmark's JSON document
into Markdown table lines (see :mod:`bench.report`, which places them in the document)."""

from __future__ import annotations

import statistics

from bench.markdown import BACKEND, ReportError, _ms, _table
from bench.tables_dbt import dbt_state
from bench.tables_expectations import expectations
from bench.tables_gate import gate
from bench.tables_migrations import migrations
from bench.tables_run_states import run_states
from bench.tables_trigger_routes import trigger_routes

__all__ = ["RENDERERS", "ReportError"]


# -- bench_triggers -----------------------------------------------------------------------------------
def triggers(doc: dict, part: str | None) -> list[str]:
    from bench.trigger_release import derived

    if part == "processes":
        return _triggers_spread(doc)

    def cell(shared, base, key, fmt):
        s = format(shared[key], fmt)
        if base is None:
            return f"{s} / not run"
        ratio = f"{base[key] / shared[key]:,.1f}x" if shared[key] else "n/a"
        return f"{s} / {format(base[key], fmt)} ({ratio})"

    rows = []
    for r in doc["results"]:
        s, b = derived(r["shared"]), r["baseline"] and derived(r["baseline"])
        rows.append(
            [
                BACKEND[r["backend"]],
                f"{r['k']:,}",
                cell(s, b, "statements_per_tick", ",.1f"),
                cell(s, b, "cpu_ms_per_tick", ",.1f"),
                cell(s, b, "kib_per_trigger", ".1f"),
                cell(s, b, "release_median_s", ".2f"),
                cell(s, b, "release_p99_s", ".2f"),
                cell(s, b, "release_max_s", ".2f"),
                f"{s['full_gc_s']:.2f} / {b['full_gc_s']:.2f}" if b else f"{s['full_gc_s']:.2f} / not run",
                _gc_pass(s),
            ]
        )
    pool = doc["inputs"]["thread_pool_size"]
    return [
        f"Baseline thread pool: {pool} worker threads.",
        "",
        *_table(
            [
                "catalog",
                "K",
                "statements per tick",
                "CPU ms per tick",
                "KiB per waiting trigger",
                "release median (s)",
                "release p99 (s)",
                "release max (s)",
                "full GC in release (s)",
                "full GC pass, K waiting (s)",
            ],
            ["---", "---:", "---", "---", "---", "---", "---", "---", "---", "---:"],
            rows,
        ),
    ]


def _triggers_spread(doc: dict) -> list[str]:
    from bench.trigger_release import derived

    if not doc.get("spread"):
        raise ReportError("bench_triggers:processes: the JSON has no run over several processes (--processes-k)")
    rows = []
    for r in doc["spread"]:
        for n, run in enumerate(r["processes"]):
            d = derived(run)
            rows.append(
                [
                    BACKEND[r["backend"]],
                    f"{r['k']:,}",
                    f"{n + 1} of {len(r['processes'])}",
                    f"{len(run['release_s']):,}",
                    f"{d['statements_per_tick']:,.1f}",
                    f"{d['cpu_ms_per_tick']:,.1f}",
                    f"{d['release_median_s']:.2f}",
                    f"{d['release_p99_s']:.2f}",
                    f"{d['release_max_s']:.2f}",
                    f"{d['full_gc_s']:.2f}",
                    _gc_pass(d),
                ]
            )
    header = "catalog|K in all|process|waiting in it|statements per tick|CPU ms per idle tick|release median (s)"
    return _table(
        [*header.split("|"), "release p99 (s)", "release max (s)", "full GC in release (s)", "full GC pass (s)"],
        ["---", "---:", "---"] + ["---:"] * 8,
        rows,
    )


def _gc_pass(d: dict) -> str:
    """The full collection timed with the triggers waiting, before the idle samples (not in older runs)."""
    return "not measured" if d.get("full_gc_waiting_s") is None else f"{d['full_gc_waiting_s']:.2f}"


# -- bench_retention ----------------------------------------------------------------------------------
def retention(doc: dict, part: str | None) -> list[str]:
    from bench.bench_retention import derived

    rows = []
    for r in doc["results"]:
        d = derived(r)
        b, w = d["before"], d["during"]
        rows.append(
            [
                BACKEND[r["backend"]],
                f"{r['pruned']['la_gate_decision']:,}",
                f"{r['pruned']['la_consumption']:,}",
                f"{r['prune_s']:,.1f} s",
                f"{d['rows_per_s']:,.0f}",
                f"{_ms(b['median'] * 1000)} / {_ms(b['max'] * 1000)} (n={b['n']:,})",
                f"{_ms(w['median'] * 1000)} / {_ms(w['max'] * 1000)} (n={w['n']:,})",
            ]
        )
    i = doc["inputs"]
    return [
        f"{i['writers']} writer processes, each recording a gate attempt every "
        f"{i['write_interval_s'] * 1000:.0f} ms; prune batches of {i['batch_size']:,} rows.",
        "",
        *_table(
            [
                "catalog",
                "decisions pruned",
                "consumption pruned",
                "prune time",
                "rows/s",
                "write ms before: median / max",
                "write ms during prune: median / max",
            ],
            ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
            rows,
        ),
    ]


# -- bench_dbt_queue ----------------------------------------------------------------------------------
def dbt_queue(doc: dict, part: str | None) -> list[str]:
    results = doc["results"]
    if part not in results:
        raise ReportError(f"bench_dbt_queue.json has no part {part!r}")
    if part == "enqueue":
        goal = doc["inputs"]["goal_events_per_s"]
        rows = []
        for backend in doc["inputs"]["backends"]:
            runs = {r["producers"]: r for r in results["enqueue"] if r["backend"] == backend}
            rows.append(
                [
                    BACKEND[backend],
                    *(f"{runs[n]['events_per_s']:,.0f}" for n in (1, 4, 8)),
                    f"{runs[8]['events_per_s'] / goal:.2f}x",
                    ", ".join(str(runs[n]["claimed_batches"]) for n in (1, 4, 8)),
                ]
            )
        return _table(
            [
                "catalog",
                "1 producer",
                "4 producers",
                "8 producers",
                f"8 producers vs goal {goal:,}/s",
                "batches claimed meanwhile (1 / 4 / 8)",
            ],
            ["---", "---:", "---:", "---:", "---:", "---:"],
            rows,
        )
    if part == "builds":
        b, rows = results["builds"], []
        names = {
            "naive": "one `dbt build` per request",
            "union": "one `dbt build` of the union of the requests",
            "queue": "queue: enqueue + drain",
        }
        for case, label in (
            ("all_at_once", f"all {b['k']} at once"),
            ("arriving_during_build", "second half during the first build"),
        ):
            base = b[case]["naive"]
            for path in ("naive", "union", "queue"):
                r = b[case][path]
                rows.append(
                    [
                        label,
                        names[path],
                        str(r["dbt_builds"]),
                        str(r["model_builds"]),
                        f"{r['wall_s']:.1f} s",
                        f"{base['model_builds'] / r['model_builds']:.1f}x",
                        f"{base['wall_s'] / r['wall_s']:.1f}x",
                    ]
                )
        return _table(
            [
                "requests",
                "path",
                "dbt builds",
                "model builds",
                "wall time",
                "fewer model builds than naive",
                "faster than naive",
            ],
            ["---", "---", "---:", "---:", "---:", "---:", "---:"],
            rows,
        )
    if part == "replay":
        rows = []
        for r in results["replay"]:
            events = r["new_pending"] + r["already_pending"] + r["already_running"]
            rows.append(
                [
                    BACKEND[r["backend"]],
                    f"{r['requests']:,}",
                    f"{events:,}",
                    f"{r['new_pending']:,}",
                    f"{r['already_pending']:,}",
                    f"{r['already_running']:,}",
                    f"{r['new_pending'] / events:.1%}",
                    f"{r['elapsed']:.1f} s",
                ]
            )
        return _table(
            [
                "catalog",
                "requests",
                "model request events",
                "new_pending",
                "already_pending",
                "already_running",
                "became new work",
                "replay time",
            ],
            ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
            rows,
        )
    raise ReportError(f"bench_dbt_queue has no table {part!r}")


# -- bench_ui -----------------------------------------------------------------------------------------
def ui(doc: dict, part: str | None) -> list[str]:
    runs = [r for r in doc["results"] if r["backend"] == part]
    if not runs:
        raise ReportError(f"bench_ui.json has no run on {part!r}")
    r, i = runs[0], doc["inputs"]
    rows = []
    for e in r["endpoints"]:
        label, before, after = e["endpoint"], e["baseline_ms"], e["indexed_ms"]
        b, a = statistics.median(before), statistics.median(after)
        rows.append([label, _ms(b), _ms(a), f"{_ms(min(after))} to {_ms(max(after))}", f"{b / a:.1f}x"])
    head = (
        f"{i['tasks']:,} tasks, {i['slots']:,} slots, {i['decisions']:,} decisions, {i['consumption']:,} "
        f"consumption rows loaded in {r['load_s']:.1f} s; "
        + (f"upgraded to the current schema in {r['upgrade_s']:.1f} s; " if "upgrade_s" in r else "")
        + f"UI indexes created in {r['index_s']:.1f} s; "
        f"{i['repeat']} requests per endpoint and index set."
    )
    return [
        head,
        "",
        *_table(
            [
                "endpoint",
                "without UI indexes: median ms",
                "with UI indexes: median ms",
                "with UI indexes: min to max ms",
                "speed-up of medians",
            ],
            ["---", "---:", "---:", "---:", "---:"],
            rows,
        ),
    ]


# -- compare_ui ---------------------------------------------------------------------------------------
def ui_versions(doc: dict, part: str | None) -> list[str]:
    runs = [r for r in doc["results"] if r["backend"] == part]
    if not runs:
        raise ReportError(f"compare_ui.json has no run on {part!r}")
    r, i = runs[0], doc["inputs"]
    labels = [label for label, _ in i["versions"]]
    first, last = labels[0], labels[-1]
    rows = []
    for e in r["endpoints"]:
        med = {v: statistics.median(s) for v, s in e["ms"].items()}
        cells = [_ms(med[v]) if v in med else "—" for v in labels]
        ratio = f"{med[last] / med[first]:.2f}x" if first in med and last in med else "—"
        rows.append([e["endpoint"], *cells, ratio])
    versions = ", ".join(f"{v} = `{c}`" for v, c in i["versions"])
    upgrades = ", ".join(f"{v} {r['upgrade_s'][v]:.1f} s" for v in labels)
    head = (
        f"{i['tasks']:,} tasks, {i['decisions']:,} decisions, loaded in {r['load_s']:.1f} s; versions: {versions}; "
        f"each copy of the catalog upgraded by its version's migrations in {upgrades}; {i['repeat']} requests "
        "per endpoint and version, the versions in turn."
    )
    return [
        head,
        "",
        *_table(
            ["endpoint", *(f"{v}: median ms" for v in labels), f"{last} / {first}"],
            ["---", *("---:" for _ in labels), "---:"],
            rows,
        ),
    ]


RENDERERS = {
    "compare_ui": ui_versions,
    "bench_triggers": triggers,
    "bench_trigger_routes": trigger_routes,
    "bench_retention": retention,
    "bench_dbt_queue": dbt_queue,
    "bench_dbt_state": dbt_state,
    "bench_gate": gate,
    "bench_ui": ui,
    "bench_migrations": migrations,
    "bench_run_states": run_states,
    "bench_expectations": expectations,
    # the same benchmark's backtest on a second history (seed 23), its JSON kept beside the first run's
    "bench_expectations_seed23": expectations,
}
