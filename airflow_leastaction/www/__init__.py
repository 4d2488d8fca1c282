"""The LeastAction pages inside the Airflow UI: a FastAPI app the plugin mounts under ``/leastaction``."""
