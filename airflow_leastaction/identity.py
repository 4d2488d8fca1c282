"""Task identities: what a child names when it declares a parent. Pure, no Airflow import."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

#: Who records a catalog task's outcomes, its ``source``: an Airflow DAG's listener, a system outside
#: Airflow through its reports, the asset bridge (an asset's events), the dbt model queue (a model's builds).
TASK_SOURCES = ("airflow", "external", "asset", "dbt")

#: The longest name the catalog keeps for a task (the width of the columns that hold one).
NAME_WIDTH = 250

#: An identity as :meth:`TaskIdentity.__str__` writes it.
_WRITTEN = re.compile(r"(?P<project>[^/]+)/(?P<name>[^@\[]+)(?:@(?P<account>[^\[]+))?(?:\[(?P<partition>[^\]]*)\])?")


@dataclass(frozen=True, order=True)
class TaskIdentity:
    """A catalog task's primary key: ``(name, project, account, partition)``.

    It is what lets a parent live in another DAG, another deployment or another team's system: names are
    the contract. ``account`` and ``partition`` are empty unless the owner uses them.
    """

    name: str
    project: str
    account: str = ""
    partition: str = ""
    #: How a child judges this parent (``"slot"`` or ``"interval"``; None: the gate's default). Set by the
    #: parent helpers; not part of the identity: it never changes equality, hashing or the catalog key.
    coverage: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for part in ("name", "project", "account", "partition"):
            value = getattr(self, part)
            if not isinstance(value, str):
                raise TypeError(f"task identity {part} must be a string, got {value!r}")
        if not self.name.strip() or not self.project.strip():
            raise ValueError(f"task identity needs a name and a project, got {self!r}")

    def __hash__(self) -> int:
        # Gates look identities up in dicts thousands of times a tick; the generated hash re-hashed the four
        # fields every time. Kept out of pickles (a string's hash differs between processes).
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = self.__dict__["_hash"] = hash((self.name, self.project, self.account, self.partition))
            return value

    def __eq__(self, other) -> bool:
        # As the generated one (the four key fields; ``coverage`` is not compared), without building tuples.
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (
            self.name == other.name
            and self.project == other.project
            and self.account == other.account
            and self.partition == other.partition
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    @cached_property
    def key(self) -> str:
        """A stable text form, used as the dependency label in gate decisions."""
        return f"catalog:{self}"

    def __str__(self) -> str:
        text = f"{self.project}/{self.name}"
        if self.account:
            text += f"@{self.account}"
        if self.partition:
            text += f"[{self.partition}]"
        return text

    @classmethod
    def parse(cls, text: str) -> TaskIdentity:
        """The identity written as :meth:`__str__` writes it: ``project/name``, then ``@account`` and
        ``[partition]`` when they are set. Raises ``ValueError`` naming the text otherwise."""
        found = _WRITTEN.fullmatch(text.strip()) if isinstance(text, str) else None
        if found is None:
            raise ValueError(
                f"task {text!r} is not a catalog identity: write it project/name (then @account, [partition])"
            )
        return cls(found["name"], found["project"], found["account"] or "", found["partition"] or "")

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "project": self.project, "account": self.account, "partition": self.partition}

    @classmethod
    def from_dict(cls, data: dict) -> TaskIdentity:
        return cls(
            data["name"], data["project"], data.get("account", ""), data.get("partition", ""), data.get("coverage")
        )

    @classmethod
    def from_row(cls, row) -> TaskIdentity:
        """The identity of a catalog task row: a mapping or a row with attributes (a database row).

        A missing (NULL) account or partition reads as empty, as the catalog writes them.
        """

        if isinstance(row, Mapping):
            return cls(row["name"], row["project"], row["account"] or "", row["partition"] or "")
        return cls(row.name, row.project, row.account or "", row.partition or "")


def airflow_task_name(dag_id: str, task_id: str) -> str:
    """The catalog name of an Airflow task: ``<dag_id>.<task_id>``, or ``<dag_id>:<task_id>`` when the DAG id
    itself contains a dot.

    Airflow ids are letters, digits, ``_``, ``-`` and ``.`` (a task in a task group is ``group.task``),
    so with a dot alone DAG ``a.b`` task ``c`` and DAG ``a`` task ``b.c`` would share the name ``a.b.c``.
    A colon never occurs in an Airflow id: a name with one splits at it, a name without one at its first
    dot, and every pair has its own name. DAG ids without a dot, the common case, keep ``<dag_id>.<task_id>``.
    """
    return f"{dag_id}{':' if '.' in dag_id else '.'}{task_id}"


def airflow_task_ids(name: str) -> tuple[str, str] | None:
    """The ``(dag_id, task_id)`` an Airflow task name was made from (None if it has no separator)."""
    dag_id, sep, task_id = name.partition(":") if ":" in name else name.partition(".")
    return (dag_id, task_id) if sep and dag_id and task_id else None


def airflow_dag_name(dag_id: str) -> str:
    """The catalog name of an Airflow DAG's runs: ``<dag_id>::run``.

    ``:`` cannot appear in a DAG or task id, so no task's catalog name can take this form.
    """
    return f"{dag_id}::run"


def airflow_asset_name(asset_name: str) -> str:
    """The catalog name of an Airflow asset's events: ``asset:<name>``.

    An Airflow task's name has a colon only after a DAG id that contains a dot, and ``asset`` has none, so
    no task of the deployment shares it.
    """
    return f"asset:{asset_name}"
