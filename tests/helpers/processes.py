"""Processes of the test cluster: instance names, process groups and the live process table (Linux /proc)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def instance_names(commands) -> list[tuple[str, str]]:
    """``(instance name, command)`` for each component: the command with dashes for spaces, numbered from
    1 when the command is listed more than once (``celery-worker-1``, ``celery-worker-2``)."""
    counts = {c: commands.count(c) for c in commands}
    seen: dict[str, int] = {}
    named = []
    for command in commands:
        seen[command] = seen.get(command, 0) + 1
        base = command.replace(" ", "-")
        named.append((f"{base}-{seen[command]}" if counts[command] > 1 else base, command))
    return named


def signal_group(comp, sig: int) -> None:
    """Send ``sig`` to the process group a component leads (nothing when it never started or is gone)."""
    if comp.process is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(comp.process.pid, sig)


def processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every live process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                found[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return found


def group_members(groups: set[int]) -> list[int]:
    """Live processes (zombies are already gone for our purposes) in any of the process ``groups``."""
    return [pid for pid, (_, group) in processes().items() if group in groups]


def describe_processes(pids: list[int]) -> list[str]:
    """One line per process: pid, state, the kernel function it sleeps in and its command line."""
    lines = []
    for pid in pids:
        proc = Path("/proc") / str(pid)
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = (proc / "wchan").read_text().strip() or "-"
        except OSError:
            continue
        lines.append(f"pid {pid} state {state} in {wchan}: {cmdline[:300]}")
    return lines
