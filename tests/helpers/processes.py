"""Processes of the test cluster: instance names, process groups and the live process table (Linux /proc)."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import time
from pathlib import Path


def subcommand(command: str) -> str:
    """The ``airflow`` subcommand of a component's command, without its options: ``celery worker`` for
    ``celery worker --queues team_a``."""
    words = command.split()
    return " ".join(words[: next((i for i, w in enumerate(words) if w.startswith("-")), len(words))])


def instance_base(command: str) -> str:
    """A component's name before numbering: its words without option flags, dashes for spaces, a comma
    list joined by ``+`` (``triggerer --queues team_a`` is ``triggerer-team_a``)."""
    return "-".join(w.replace(",", "+") for w in command.split() if not w.startswith("-"))


def instance_names(commands) -> list[tuple[str, str]]:
    """``(instance name, command)`` for each component: :func:`instance_base` of the command, numbered
    from 1 when the command is listed more than once (``celery-worker-1``, ``celery-worker-2``)."""
    counts = {c: commands.count(c) for c in commands}
    seen: dict[str, int] = {}
    named = []
    for command in commands:
        seen[command] = seen.get(command, 0) + 1
        base = instance_base(command)
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


def dump_stacks(pids: list[int], wait: float = 5.0) -> None:
    """Ask each process for its Python threads' stacks: SIGABRT, on which a process run with
    PYTHONFAULTHANDLER=1 writes them to its stderr and ends (no core file: its core limit is set to 0 first).
    Waits up to ``wait`` seconds for them to go."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
            os.kill(pid, signal.SIGABRT)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(pid in processes() for pid in pids):
        time.sleep(0.1)


_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line \d+ in (?P<func>\S+)', re.M)


def deadlocked_in_signal_handler_log(log_text: str) -> bool:
    """Whether a fault handler's stack dump in ``log_text`` shows a thread stuck in Airflow's SIGTERM
    handler on its log line: the innermost frame waits in structlog's write (``_output.py``), the handler
    (``_exit_gracefully``, in Airflow) is below it, and below that the log line it interrupted was being
    written. structlog's write lock is not reentrant, so such a handler waits for itself forever."""
    for block in re.split(r"\n\s*\n", log_text):
        frames = [(m["path"], m["func"]) for m in _FRAME.finditer(block)]
        handler = next(
            (i for i, (path, func) in enumerate(frames) if func == "_exit_gracefully" and "/airflow/" in path), None
        )
        if handler is None or not frames or not frames[0][0].endswith("structlog/_output.py"):
            continue
        if any("airflow_leastaction" in path for path, _ in frames):
            continue  # the provider's code is on the stack: not Airflow's handler alone
        if any(path.endswith("structlog/_output.py") for path, _ in frames[handler + 1 :]):
            return True
    return False
