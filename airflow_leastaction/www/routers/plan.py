"""Planning a re-run from a task's catalog entry: the plan ``airflow-leastaction plan`` prints.

Tasks of DAGs the user may not read are withheld: the plan says how many of its runs it does not show, and
names none of them; such a task asked about is answered as one not in the catalog.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse

from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import PlanApplyError, PlanError
from airflow_leastaction.reruns.plan_reads import make_plan
from airflow_leastaction.www.access import READ_TASKS, READABLE_DAGS
from airflow_leastaction.www.params import blank
from airflow_leastaction.www.queries import DagScope
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import Scope, catalog_reads, page_scope, render

router = APIRouter(tags=["plan"], dependencies=[READ_TASKS])


def visible_plan(plan, scope: DagScope) -> dict:
    """The plan as JSON, cut to the DAGs the user may read: a task of another DAG is named nowhere (not in
    a wave, not in what a shown task consumes); the count of runs withheld is kept."""
    data = plan.as_dict()
    hidden = {str(t.identity) for t in plan.tasks.values() if not scope.allows(t.dag_id)}
    withheld = 0
    waves = []
    for wave in data["waves"]:
        shown = [
            {**t, "consumes": [c for c in t["consumes"] if c not in hidden]} for t in wave if t["task"] not in hidden
        ]
        withheld += sum(len(t["slots"]) for t in wave if t["task"] in hidden)
        if shown:
            waves.append(shown)
    return {**data, "waves": waves, "withheld_runs": withheld}


def plan_of(
    task: str,
    start: str = Query(..., alias="from", description="first slot, ISO-8601 with offset"),
    end: str = Query(..., alias="to", description="last slot, ISO-8601 with offset"),
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
) -> dict:
    try:
        # A task of a DAG the user may not read is answered as a task not in the catalog.
        plan = make_plan(CatalogStore(reads.engine), task, start, end, lambda t: scope.allows(t.dag_id))
    except (PlanError, PlanApplyError) as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    return visible_plan(plan, scope)


@router.get("/api/plan")
def plan_json(plan: dict = Depends(plan_of)) -> dict:
    """What re-running ``task``'s slots from ``from`` to ``to`` touches: the JSON of ``plan --json``."""
    return plan


@router.get("/plan", response_class=HTMLResponse, name="plan_page")
def plan_page(
    request: Request,
    task: str | None = None,
    start: str | None = Query(None, alias="from"),
    end: str | None = Query(None, alias="to"),
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
    tab: Scope = Depends(page_scope),
):
    """The plan of re-running a task's slots, with the form that asks for it."""
    form = {"task": blank(task) or "", "from": blank(start) or "", "to": blank(end) or ""}
    shown = {"form": form, "scope": tab, "plan": None, "error": None}
    if not all(form.values()):
        return render(request, "plan.html", "catalog", **shown)
    try:
        plan = plan_of(form["task"], form["from"], form["to"], reads, scope)
    except HTTPException as exc:
        page = render(request, "plan.html", "catalog", **{**shown, "error": exc.detail})
        page.status_code = exc.status_code
        return page
    return render(request, "plan.html", "catalog", **{**shown, "plan": plan})
