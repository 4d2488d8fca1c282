#!/usr/bin/env bash
# One-off initialisation, run by the airflow-init service before any Airflow component starts:
# migrate Airflow's database and the catalog, then deploy the example dbt project.
#
# The example project lives in the image (read-only, with the DAGs); it is copied onto the dbt-data
# volume on first start, because its ingest DAGs land rows in its CSV sources and dbt writes target/
# and logs/ next to it. The first `dbt build` creates every model, views included: the queue rebuilds
# tables on demand, while views (such as stg_field_ops__projects) only need deploying once per release.
set -euo pipefail

airflow db migrate
airflow-leastaction db upgrade

src="${FIELD_OPS_DBT_PROJECT_SOURCE:-/opt/airflow/dags/dbt_project}"
dst="${FIELD_OPS_DBT_PROJECT_DIR:?set FIELD_OPS_DBT_PROJECT_DIR to the dbt project directory on a volume}"
if [ ! -f "$dst/dbt_project.yml" ]; then
  mkdir -p "$dst"
  cp -R "$src/." "$dst/"
  rm -rf "$dst/target" "$dst/logs"
fi
# Re-deploying after an upgrade is idempotent: dbt rebuilds views and tables from the current sources.
(cd "$dst" && dbt build --quiet --project-dir . --profiles-dir .)
echo "airflow-init: Airflow, the catalog and the example dbt project are deployed"
