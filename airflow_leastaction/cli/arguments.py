"""What each command-line option accepts, checked while the command line is parsed: before anything is
read or written, a bad value is one ``error:`` line naming the option, exit status 2.

Each kind is an argparse ``type``: it turns the text into the value the command uses, or raises
:class:`argparse.ArgumentTypeError` saying what was expected. An option that declares no kind is
:class:`Text` (:func:`give_every_option_a_kind`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import Column

from airflow_leastaction.catalog.schema import task
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.identity import TaskIdentity, airflow_task_ids, airflow_task_name
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.intervals.slots import slot_in_range

#: The largest whole number the catalog stores (a 64-bit signed integer).
MAX_COUNT = 2**63 - 1
#: The longest duration a seconds option takes: 30 days (a heartbeat or a grace period beyond it is a typo).
MAX_SECONDS = 30 * 24 * 3600.0
#: The longest Airflow connection id (Airflow's ``ID_LEN``).
CONN_ID_LENGTH = 250
#: The longest free text an option takes (Linux's longest single argument is 128 KiB).
MAX_TEXT = 65_536


class Kind:
    """An argparse ``type`` with a name argparse shows when the kind itself fails."""

    #: What the option accepts, in the words of its error message.
    expected = "a value"

    def __call__(self, text: str):
        if "\x00" in text:
            raise argparse.ArgumentTypeError(f"{_shown(text)} holds a NUL character; expected {self.expected}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes of another encoding, as Python passes them on from argv
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not UTF-8 text; expected {self.expected}") from None
        return self.convert(text)

    def convert(self, text: str):
        return text

    def fail(self, text: str, why: str = "") -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"{_shown(text)}{f' {why}' if why else ''}: expected {self.expected}")


class Text(Kind):
    """Free text, at most :data:`MAX_TEXT` characters; ``nonempty``: not blank either."""

    def __init__(self, *, nonempty: bool = False, expected: str | None = None):
        self.nonempty = nonempty
        shape = f"{'non-empty ' if nonempty else ''}text of at most {MAX_TEXT:,} characters"
        self.expected = f"{expected} ({shape})" if expected else shape

    def convert(self, text: str) -> str:
        if len(text) > MAX_TEXT or (self.nonempty and not text.strip()):
            raise self.fail(text)
        return text


class Name(Kind):
    """A name the catalog stores in ``column`` (or one at most ``column`` characters long, when a number):
    at most as long as the column, and not empty unless ``empty`` (account, partition)."""

    def __init__(self, column: Column | int, *, empty: bool = False):
        self.limit, self.empty = _length(column), empty
        self.expected = f"a name of {0 if empty else 1} to {self.limit} characters"

    def convert(self, text: str) -> str:
        if len(text) > self.limit:
            raise self.fail(text, f"is {len(text)} characters")
        if not self.empty and not text.strip():
            raise self.fail(text)
        return text


class Count(Kind):
    """A whole number from ``minimum`` to :data:`MAX_COUNT`."""

    def __init__(self, minimum: int = 0):
        self.minimum = minimum
        self.expected = f"a whole number from {minimum} to {MAX_COUNT}"

    def convert(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise self.fail(text) from None
        if not self.minimum <= value <= MAX_COUNT:
            raise self.fail(text)
        return value


class Seconds(Kind):
    """A duration in seconds: more than 0, at most :data:`MAX_SECONDS`."""

    expected = f"a number of seconds above 0 and at most {MAX_SECONDS:.0f}"

    def convert(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise self.fail(text) from None
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise self.fail(text)
        return value


class Instant(Kind):
    """An ISO-8601 time with a UTC offset (``Z`` for UTC)."""

    expected = "an ISO-8601 time with an offset, e.g. 2026-11-28T00:00:00+00:00"

    def convert(self, text: str) -> dt.datetime:
        try:
            value = parse_iso_instant(text)
        except ValueError:
            raise self.fail(text) from None
        if value.tzinfo is None:
            raise self.fail(text, "has no timezone offset")
        return value


class Slot(Instant):
    """An :class:`Instant` inside the slots' range (:func:`~airflow_leastaction.intervals.slots.slot_in_range`)."""

    def convert(self, text: str) -> dt.datetime:
        value = super().convert(text)
        try:
            slot_in_range(value)
        except ValueError as exc:
            raise self.fail(text, str(exc).partition(" ")[2]) from None
        return value


class Checked(Kind):
    """A value ``check`` accepts (it raises a :class:`ConfigurationError` naming what is wrong), at most
    as long as ``column`` (or :data:`MAX_TEXT` characters)."""

    def __init__(self, check, expected: str, column: Column | None = None):
        self.check, self.expected = check, expected
        self.limit = MAX_TEXT if column is None else _length(column)

    def convert(self, text: str) -> str:
        if len(text) > self.limit:
            raise self.fail(text, f"is {len(text)} characters, the catalog holds {self.limit}")
        try:
            self.check(text)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text


class Identity(Kind):
    """A catalog task written ``project/name`` (then ``@account``, ``[partition]``), each part at most as
    long as the catalog's column for it."""

    expected = "a catalog task written project/name (then @account, [partition])"

    def convert(self, text: str) -> TaskIdentity:
        try:
            identity = TaskIdentity.parse(text)
        except ValueError:
            raise self.fail(text) from None
        for part in ("name", "project", "account", "partition"):
            limit = _length(task.c[part])
            if len(getattr(identity, part)) > limit:
                raise self.fail(text, f"has a {part} longer than the catalog's {limit} characters")
        return identity


class AirflowTaskName(NamedTuple):
    """An Airflow task as the command line names it; the catalog finds it by its DAG and task ids."""

    dag_id: str
    task_id: str

    def __str__(self) -> str:
        return airflow_task_name(self.dag_id, self.task_id)


class AnyTask(Identity):
    """An Airflow task written ``DAG.TASK`` (``DAG:TASK`` when the DAG id has a dot), as an
    :class:`AirflowTaskName`, or a catalog task written ``project/name`` as :class:`Identity` takes it."""

    expected = "an Airflow task written DAG.TASK, or a catalog task written project/name"
    #: An Airflow id: letters, digits, ``_``, ``-`` and ``.``, at most 250 characters.
    AIRFLOW_ID = re.compile(r"[\w.-]{1,250}", re.ASCII)

    def convert(self, text: str) -> TaskIdentity | AirflowTaskName:
        if "/" in text:
            return super().convert(text)
        ids = airflow_task_ids(text.strip())
        if ids is None or not all(self.AIRFLOW_ID.fullmatch(part) for part in ids):
            raise self.fail(text)
        return AirflowTaskName(*ids)


class Directory(Kind):
    """An existing directory; ``holding``: a file it must hold (``dbt_project.yml``)."""

    def __init__(self, holding: str | None = None):
        self.holding = holding
        self.expected = f"a directory{f' holding {holding}' if holding else ''}"

    def convert(self, text: str) -> str:
        path = Path(text)
        try:
            ok = path.is_dir() and (self.holding is None or (path / self.holding).is_file())
        except (OSError, ValueError):  # a name too long for the file system
            ok = False
        if not ok:
            raise self.fail(text)
        return text


class File(Kind):
    """An existing file."""

    expected = "an existing file"

    def convert(self, text: str) -> str:
        try:
            ok = Path(text).is_file()
        except (OSError, ValueError):
            ok = False
        if not ok:
            raise self.fail(text)
        return text


def _length(column: Column | int) -> int:
    return column if isinstance(column, int) else column.type.length


def _shown(text: str) -> str:
    """The value as an error quotes it: a long value by its start and its length."""
    return repr(text) if len(text) <= 80 else f"{text[:40]!r}... ({len(text)} characters)"


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """``(command words, parser)`` of ``parser`` and every subcommand below it."""
    yield path, parser
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def takes_a_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))


def give_every_option_a_kind(parser: argparse.ArgumentParser) -> None:
    """Options that take a value and declare no kind (and no choices) take :class:`Text`."""
    for _, command in commands(parser):
        for action in command._actions:
            if takes_a_value(action) and action.type is None and action.choices is None:
                action.type = Text()
