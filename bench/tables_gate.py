"""The tables of the run-condition gate benchmark (:mod:`bench.bench_gate`) in docs/performance.md."""

from __future__ import annotations

import statistics

from bench.markdown import BACKEND, ReportError, _runs, _table


def gate(doc: dict, part: str | None) -> list[str]:
    results = doc["results"]
    if {"sensor": "latency"}.get(part, part) not in results:  # the sensor's runs are in the latency part
        raise ReportError(f"bench_gate.json has no part {part!r}")
    if part == "engine":
        base = results["engine"][0]["per_s"]
        return _table(
            ["dependencies", "evaluations/s", "time per evaluation", "vs 10"],
            ["---:", "---:", "---:", "---:"],
            [
                [
                    f"{r['dependencies']:,}",
                    f"{r['per_s']:,.0f}",
                    f"{1000 / r['per_s']:.2f} ms",
                    f"{r['per_s'] / base:.3f}x",
                ]
                for r in results["engine"]
            ],
        )
    if part == "writes":
        rows = []
        for r in results["writes"]:
            g, p = statistics.median(r["gated_ms"]), statistics.median(r["plain_ms"])
            rows.append(
                [
                    BACKEND[r["backend"]],
                    str(r["dependencies"]),
                    f"{g:.1f} ms ({min(r['gated_ms']):.1f} to {max(r['gated_ms']):.1f})",
                    f"{p:.1f} ms ({min(r['plain_ms']):.1f} to {max(r['plain_ms']):.1f})",
                    f"{g / p:.1f}x",
                    f"{r['gated_statements']:.0f} / {r['plain_statements']:.0f}",
                    str(len(r["gated_ms"])),
                ]
            )
        return _table(
            [
                "catalog",
                "dependencies",
                "decisions + success + consumption: median (min to max)",
                "plain success: median (min to max)",
                "ratio of medians",
                "statements (gated / plain)",
                "attempts",
            ],
            ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
            rows,
        )
    if part == "latency":
        lat = results["latency"]
        g, r = statistics.median(lat["any_gate_s"]), statistics.median(lat["one_success_s"])
        rows = [_median_row('ANY gate (`run_condition(child, first, slow_a, slow_b, when="ANY")`)', lat["any_gate_s"])]
        if worker := lat.get("any_gate_worker_s"):
            rows.append(_median_row("the same gate with `start_from_trigger=False` (resumed on a worker)", worker))
        if native := lat.get("any_native_s"):
            label = "the same condition with `native=True` (no gate; the task carries `one_success`)"
            rows.append(_median_row(label, native))
        rows.append(_median_row('Airflow `trigger_rule="one_success"` on the same shape', lat["one_success_s"]))
        rows.append(["ratio of medians gate / `one_success`", f"{g / r:.1f}x", ""])
        if native:
            rows.append(["ratio of medians `native=True` / `one_success`", f"{statistics.median(native) / r:.1f}x", ""])
        failed = lat.get("failed_runs", [])
        rows.append(
            [
                "runs that did not succeed (excluded above)",
                str(len(failed)),
                "; ".join(f"{f['run_id']}: {f['state']}" for f in failed),
            ]
        )
        return _table(["", "median", "all runs (s)"], ["---", "---:", "---"], rows)
    if part == "sensor":
        lat = results["latency"]
        if not lat.get("sensor_release_s"):
            raise ReportError("bench_gate:sensor: the JSON has no sensor runs (run the latency part)")
        return _table(
            ["from the parent task's end to", "median", "all runs (s)"],
            ["---", "---:", "---"],
            [
                _median_row("the sensor's end (its release)", lat["sensor_release_s"]),
                _median_row("the gated task's start", lat["sensor_child_start_s"]),
                ["poll interval of the deployment", f"{lat['poll_interval_s']:.2f} s", ""],
            ],
        )
    raise ReportError(f"bench_gate has no table {part!r}")


def _median_row(label: str, samples: list[float]) -> list[str]:
    """A latency row: its label, the median of its runs, and every run."""
    return [label, f"{statistics.median(samples):.2f} s", _runs(samples)]
