// Keep the browser's address in step with this page inside a DAG or task-instance tab, so a reload shows
// the same page. Airflow keeps a menu page's address itself (/plugin/<page>/<this page's path>); a tab's
// frame (/dags/<dag>/.../plugin/<tab>) always starts at the tab's own address, so the page is kept in the
// parent's "la" query parameter and restored once, on the first page the tab loads.
(function () {
  try {
    var parent = window.parent;
    if (parent === window) return;
    var here = window.location.pathname + window.location.search;
    var outer = parent.location;
    if (outer.pathname.indexOf("/dags/") === -1 || outer.pathname.indexOf("/plugin/") === -1) return;
    var params = new URLSearchParams(outer.search);
    var kept = params.get("la");
    var first = parent.__leastactionRestored !== outer.pathname;
    parent.__leastactionRestored = outer.pathname;
    var base = {{ base | tojson }} + "/";
    if (first && kept && kept !== here && kept.indexOf(base) === 0) {
      window.location.replace(kept);
      return;
    }
    params.set("la", here);
    parent.history.replaceState(parent.history.state, "", outer.pathname + "?" + params.toString() + outer.hash);
  } catch (e) {}
})();
