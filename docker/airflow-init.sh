#!/usr/bin/env bash
# One-off initialisation, run by the airflow-init service before any Airflow component starts:
# migrate Airflow's database and the catalog, then deploy the example dbt project.
#
# The example project lives in the image (read-only, with the DAGs); it is deployed onto the dbt-data
# volume because its ingest DAGs land rows in its CSV sources (data/) and dbt writes target/ and logs/
# next to it. Every init resyncs the volume's copy to the image's: after an upgrade dbt builds the new
# models, and a model the upgrade removed is gone. The volume keeps its own data/ (only source files it
# lacks are seeded from the image), target/ and logs/. The `dbt build` creates every model, views
# included: the queue rebuilds tables on demand, while views (such as stg_field_ops__projects) only need
# deploying once per release.
set -euo pipefail

src="${FIELD_OPS_DBT_PROJECT_SOURCE:-/opt/airflow/dags/dbt_project}"
dst="${FIELD_OPS_DBT_PROJECT_DIR:?set FIELD_OPS_DBT_PROJECT_DIR to the dbt project directory on a volume}"
[ -f "$src/dbt_project.yml" ] || { echo "airflow-init: no dbt_project.yml in $src (FIELD_OPS_DBT_PROJECT_SOURCE)" >&2; exit 1; }

airflow db migrate
airflow-leastaction db upgrade

kept=(-name data -o -name target -o -name logs)
mkdir -p "$dst/data"
find "$dst" -mindepth 1 -maxdepth 1 ! \( "${kept[@]}" \) -exec rm -rf {} +
find "$src" -mindepth 1 -maxdepth 1 ! \( "${kept[@]}" \) -exec cp -R {} "$dst/" \;
if [ -d "$src/data" ]; then
  (cd "$src/data" && find . -type f) | while IFS= read -r f; do
    if [ ! -e "$dst/data/$f" ]; then
      mkdir -p "$(dirname "$dst/data/$f")"
      cp "$src/data/$f" "$dst/data/$f"
    fi
  done
fi
# Re-deploying after an upgrade is idempotent: dbt rebuilds views and tables from the current sources.
(cd "$dst" && dbt build --quiet --project-dir . --profiles-dir .)
echo "airflow-init: Airflow, the catalog and the example dbt project are deployed"
