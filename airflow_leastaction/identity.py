"""Task identities: what a child names when it declares a parent. Pure, no Airflow import."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


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
        for field in ("name", "project", "account", "partition"):
            value = getattr(self, field)
            if not isinstance(value, str):
                raise TypeError(f"task identity {field} must be a string, got {value!r}")
        if not self.name.strip() or not self.project.strip():
            raise ValueError(f"task identity needs a name and a project, got {self!r}")

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

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "project": self.project, "account": self.account, "partition": self.partition}

    @classmethod
    def from_dict(cls, data: dict) -> "TaskIdentity":
        return cls(data["name"], data["project"], data.get("account", ""), data.get("partition", ""),
                   data.get("coverage"))


def airflow_task_name(dag_id: str, task_id: str) -> str:
    """The catalog name of an Airflow task: ``<dag_id>.<task_id>``."""
    return f"{dag_id}.{task_id}"
