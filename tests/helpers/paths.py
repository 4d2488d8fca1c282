"""Where the checkout's parts are, wherever a test file sits in the tiers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dags_examples"
DOCKER = ROOT / "docker"
