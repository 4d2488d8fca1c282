"""One gate attempt as the verdict pages draw it: the verdict first (condition, how many met, outcome and
when), its decisions under it, folded when the attempt was admitted. Pure.

A page of verdicts draws dozens of cards and hundreds of dependency rows; as a Jinja macro the card was
most of the page's time (each row's filters, tests and lookups go through Jinja's runtime). Here it is
one function building the same HTML, every value escaped (``escape``), as autoescaping did.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from airflow_leastaction.run_conditions.model import task_of_key
from airflow_leastaction.www.fragments import badge, task_instance, to_airflow
from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.present import Clock, ago, tone

if TYPE_CHECKING:
    from airflow_leastaction.www.attempts import AttemptView

#: What "this attempt alone" drops from the page's query: the filters that would hide the attempt's rows.
_FILTERS = ["cursor", "dag", "task", "run", "result", "since", "until"]

_HEAD = "<thead><tr><th>Dependency</th><th>Result</th><th>Reason</th><th>Upstream slot</th></tr></thead>"


def verdict_card(
    view: AttemptView, airflow: AirflowLinks, clock: Clock, now: dt.datetime, request, gated_by: Callable
) -> Markup:
    """The card of ``view``; links of the page's own (``request``) keep its scope."""
    v, k = view.verdict, view.key
    out = [
        f'<section class="verdict tone-{escape(tone(v.outcome))}" data-outcome="{escape(v.outcome)}">',
        f'<header>{badge(v.outcome)} <span class="headline">{escape(v.headline)}</span> '
        f'<span class="muted">needs {escape(v.condition)}</span>',
    ]
    if v.at:
        out.append(f' <span class="muted">at {escape(clock.when(v.at))}</span>')
    out.append('</header>\n<div class="facts">')
    out.append(f"<span>{task_instance(airflow, k.dag_id, k.run_id, k.task_id, k.map_index)}</span>")
    if k.attempt:
        log = airflow.log(k.dag_id, k.run_id, k.task_id, k.map_index, k.attempt)
        out.append(f"<span>{to_airflow(log, f'attempt {k.attempt} log')}</span>")
    out.append(_kind(view, airflow, request, gated_by))
    if v.since:
        out.append(f"<span>waiting since {escape(clock.when(v.since))}</span>")
    if v.deadline:
        out.append(f"<span>deadline {escape(clock.when(v.deadline))} ({escape(ago(v.deadline, now))})</span>")
    if v.next_look:
        out.append(f"<span>next look {escape(clock.when(v.next_look))}</span>")
    out.append("</div>\n")
    if view.expected:
        out.append(f'<div class="expected">{escape(view.expected)}</div>\n')
    out.extend(_warning(w, clock) for w in view.warnings)
    if v.why:
        out.append(f'<div class="why reason">{escape(clock.in_text(v.why))}</div>\n')
    if view.rows:
        out.append(_decisions(view, airflow, clock, request))
    elif view.gate is not None and view.gate.dependencies:
        deps = ", ".join(f"{escape(d.label)} ({escape(d.type.value)})" for d in view.gate.dependencies)
        out.append(f'<div class="why muted">Depends on: {deps}</div>\n')
    out.append("</section>\n")
    return Markup("".join(out))


def _warning(w: dict, clock: Clock) -> str:
    """An early warning before the gate's deadline: ``deadline 06:00 CET: warned at 04:12 CET, expected
    06:40 CET (p90), waiting on feeds/orders``; when it cleared, when it came back on time."""

    def at(value) -> str:
        return "—" if value is None else f"{clock.local(value):%H:%M %Z}".strip()

    text = f"deadline {at(w['deadline'])}: warned at {at(w['created_at'])}"
    if w["state"] == "cleared":
        text += f", back on time at {at(w['updated_at'])} (expected {at(w['expected_p90'])}, p90)"
    else:
        text += f", expected {at(w['expected_p90'])} (p90)"
        if w["critical_path"]:
            text += f", waiting on {w['critical_path']}"
    if (w["callback_outcome"] or "").startswith("failed"):
        text += f"; the callback {w['callback_outcome']}"
    title = clock.when(w["deadline"])
    return (
        f'<div class="why deadline-warning tone-{escape(tone(w["state"]))}" data-state="{escape(w["state"])}" '
        f'title="deadline {escape(title)}">{badge(w["state"])} {escape(text)}</div>\n'
    )


def _kind(view: AttemptView, airflow: AirflowLinks, request, gated_by: Callable) -> str:
    """What kind of gate recorded the attempt, linking a run-condition gate to the task it admits."""
    k, gate = view.key, view.gate
    gated = gated_by(k.task_id)
    if gated:
        here = request.url.remove_query_params("cursor").include_query_params(dag_id=k.dag_id, task_id=gated)
        there = to_airflow(airflow.task_instance(k.dag_id, k.run_id, gated, k.map_index), "in Airflow")
        return f'<span>gate of <a class="gated-task" href="{escape(str(here))}">{escape(gated)}</a> ({there})</span>'
    if gate is None:
        return ""
    if gate.kind == "sensor":
        return f"<span>sensor admitting {escape(', '.join(view.gated))}</span>"
    if gate.kind == "native":
        return "<span>native run condition (trigger rule)</span>"
    if gate.kind == "run gate":
        return "<span>run gate: admits the whole run</span>"
    return ""


def _decisions(view: AttemptView, airflow: AirflowLinks, clock: Clock, request) -> str:
    """The attempt's dependency rows (the first of them when it judged more), open unless admitted."""
    v, k, rows = view.verdict, view.key, view.rows
    summary = f"{v.total} dependenc{'y' if v.total == 1 else 'ies'}"
    if v.total > len(rows):
        alone = request.url.remove_query_params(_FILTERS).include_query_params(
            dag_id=k.dag_id, task_id=k.task_id, run_id=k.run_id, map_index=k.map_index
        )
        summary += f' (the first {len(rows)} shown: <a href="{escape(str(alone))}">this attempt alone</a>)'
    out = [f"<details{'' if v.folded else ' open'}>\n<summary>{summary}</summary>\n"]
    out.append(f'<div class="table-wrap"><table>\n{_HEAD}\n<tbody>\n')
    out.extend(_row(d, airflow, clock) for d in rows)
    out.append("</tbody>\n</table></div>\n</details>\n")
    return "".join(out)


def _row(d: dict, airflow: AirflowLinks, clock: Clock) -> str:
    dependency = d["dependency"]
    name = task_of_key(dependency)
    if name is not None:
        dependency_html = to_airflow(airflow.task_instance(d["dag_id"], d["run_id"], name, d["map_index"]), name)
    else:
        dependency_html = escape(dependency)
    result = badge(d["result"])
    if d["result"] == "MISSING":
        result += Markup('<br><span class="muted">admitted degraded without it</span>')
    if d["upstream_slot"]:
        slot = escape(clock.when(d["upstream_slot"]))
        if d["upstream_revision"] is not None:
            slot += Markup(f'<br><span class="muted">revision {escape(d["upstream_revision"])}</span>')
    else:
        slot = "—"
    if d.get("upstream_run_id") and d.get("upstream_task_id"):
        upstream = airflow.task_instance(d["upstream_dag_id"], d["upstream_run_id"], d["upstream_task_id"])
        slot += Markup(f"<br>{to_airflow(upstream, 'upstream run')}")
    return (
        f'<tr><td>{dependency_html}<br><span class="muted">{escape(d["dependency_type"])}</span></td>'
        f"<td>{result}</td>"
        f'<td class="reason">{escape(clock.in_text(d["reason"] or ""))}</td>'
        f'<td class="when">{slot}</td></tr>\n'
    )
