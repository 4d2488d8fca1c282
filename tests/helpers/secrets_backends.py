"""A real secrets backend class for Airflow's ``[secrets] backend`` / ``[workers] secrets_backend``, whose
remote store a test can take away.

While the file named by ``LEASTACTION_TEST_SECRETS_DOWN`` exists, every look-up raises ``TimeoutError``,
as a remote store's client does when the store does not answer; otherwise the backend holds the
connections of ``LEASTACTION_TEST_SECRETS`` (JSON: connection id to Airflow's JSON form of a connection).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

try:
    from airflow.sdk.bases.secrets_backend import BaseSecretsBackend
except ImportError:  # Airflow 3.1 keeps it in the core
    from airflow.secrets.base_secrets import BaseSecretsBackend

CLASS_PATH = "tests.helpers.secrets_backends.RemoteStoreBackend"
DOWN_FILE = "LEASTACTION_TEST_SECRETS_DOWN"
HELD = "LEASTACTION_TEST_SECRETS"


class RemoteStoreBackend(BaseSecretsBackend):
    #: How many look-ups found the store away, in this process.
    refused = 0

    def get_conn_value(self, conn_id: str, team_name: str | None = None) -> str | None:
        down = os.environ.get(DOWN_FILE)
        if down and Path(down).exists():
            RemoteStoreBackend.refused += 1
            raise TimeoutError(f"the secrets store did not answer for {conn_id!r}")
        value = json.loads(os.environ.get(HELD) or "{}").get(conn_id)
        return json.dumps(value) if value is not None else None


def configured(down_file: Path, held: dict | None = None) -> dict[str, str]:
    """The environment that makes this backend the custom secrets backend of a process, servers and
    workers alike; it fails while ``down_file`` exists."""
    return {
        "AIRFLOW__SECRETS__BACKEND": CLASS_PATH,
        "AIRFLOW__WORKERS__SECRETS_BACKEND": CLASS_PATH,
        DOWN_FILE: str(down_file),
        HELD: json.dumps(held or {}),
    }
