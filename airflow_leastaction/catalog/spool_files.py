"""The spool's files on disk, so that no outcome is ever lost between a write and its replay.

* ``pending-*.jsonl``: outcomes waiting for the catalog, one JSON line each. A writer appends under an
  exclusive ``flock`` and checks, once it holds it, that the file it opened still has that name.
* ``replaying-*.jsonl``: a file a replay claimed (renamed, under the same lock, held until the replay has
  applied every outcome in it or put them back). A replay killed half-way (SIGKILL, out of memory) leaves
  its file behind; the lock dies with the process, so the next replay takes the file back.
* ``quarantine-*.jsonl``: outcomes that can never be applied (:mod:`~airflow_leastaction.catalog.spool_check`),
  and spool files that could not be read at all, set aside whole under that name.

Locks are advisory ``flock`` locks on local files: a spool directory belongs to one machine.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from airflow_leastaction.catalog.spool_check import QUARANTINE_PREFIX
from airflow_leastaction.crash_points import CrashPoint

PENDING = "pending-"
REPLAYING = "replaying-"
SPOOL_SUFFIX = ".jsonl"

AFTER_CLAIM_FILE = CrashPoint("spool.after_claim_file", "a spool file renamed as claimed, the next not yet")
AFTER_RELEASE_FILE = CrashPoint("spool.after_release_file", "a replayed spool file removed, the next not yet")


def has_backlog(directory: Path) -> bool:
    """Whether ``directory`` holds outcomes to replay (pending, or claimed by a replay that may be gone)."""
    return directory.is_dir() and any(
        True for prefix in (PENDING, REPLAYING) for _ in directory.glob(f"{prefix}*{SPOOL_SUFFIX}")
    )


def append(directory: Path, lines: list[str], name: str | None = None) -> Path:
    """Append ``lines`` (one outcome each) to this process's pending file, fsynced, under its lock."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"{PENDING}{os.getpid()}{SPOOL_SUFFIX}")
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _still_named(fd, path):  # else a replay claimed the file while this waited: open a new one
                os.write(fd, text)
                os.fsync(fd)
                return path
        finally:
            os.close(fd)


@dataclass
class Claimed:
    """A spool file this replay holds: renamed to ``path``, locked through ``fd`` until released."""

    path: Path
    fd: int
    #: The name the file had when this replay claimed it.
    claimed_from: str

    def read_lines(self) -> Iterator[bytes]:
        with open(self.fd, "rb", closefd=False) as fh:
            fh.seek(0)
            yield from (line for line in fh if line.strip())

    def release(self) -> None:
        """The outcomes are applied, quarantined or put back: forget the file."""
        self.path.unlink(missing_ok=True)
        os.close(self.fd)
        AFTER_RELEASE_FILE()

    def put_back(self) -> None:
        """Nothing of the file is known to be applied or put back elsewhere: it is pending again."""
        self.path.rename(self.path.with_name(f"{PENDING}{os.getpid()}-{uuid.uuid4().hex[:8]}{SPOOL_SUFFIX}"))
        os.close(self.fd)

    def set_aside(self) -> Path:
        """The file cannot be read: keep it whole, as quarantined, for an operator to look at."""
        aside = _aside_name(self.path.with_name(self.claimed_from))
        self.path.rename(aside)
        os.close(self.fd)
        return aside


def claim(directory: Path, unreadable: list[tuple[Path, Path, OSError]]) -> list[Claimed]:
    """Claim every pending file, and every claimed file whose replay is gone, oldest name first.

    A file another process holds (a writer appending, a live replay) is left to it. A spool entry that
    cannot even be opened is set aside whole; ``(its name, where it went, why)`` is appended to
    ``unreadable``.
    """
    claimed = []
    for prefix in (REPLAYING, PENDING):
        for path in sorted(directory.glob(f"{prefix}*{SPOOL_SUFFIX}")):
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # claimed by another replay meanwhile
            except OSError as exc:  # permissions: nothing this process can do but keep it aside
                aside = _aside_name(path)
                path.rename(aside)
                unreadable.append((path, aside, exc))
                continue
            mine = _claim_one(fd, path)
            if mine is not None:
                claimed.append(mine)
                AFTER_CLAIM_FILE()
    return claimed


def _claim_one(fd: int, path: Path) -> Claimed | None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: a writer appending, or a replay still alive
        os.close(fd)
        return None
    if not _still_named(fd, path):  # another replay claimed it between the listing and the lock
        os.close(fd)
        return None
    mine = path.with_name(f"{REPLAYING}{uuid.uuid4().hex}{SPOOL_SUFFIX}")
    path.rename(mine)
    return Claimed(mine, fd, path.name)


def _aside_name(path: Path) -> Path:
    # The name it had stays in the new one, for the operator who reads the quarantine.
    return path.with_name(f"{QUARANTINE_PREFIX}unreadable-{uuid.uuid4().hex[:8]}-{path.name}")


def _still_named(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)
