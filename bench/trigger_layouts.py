"""The gates of the several-triggerer benchmark (:mod:`bench.bench_trigger_routes`) and the two ways they are
laid out over triggerer processes.

The parent sets look like a deployment's: teams own the parents (upstream tasks are fewer than the gates
that wait on them, :data:`GATES_PER_PARENT`), most gates wait on one parent, some on two or three
(:data:`PARENT_COUNTS`), and a gate waits on parents of its own team :data:`OWN_TEAM` of the time, on any
team's otherwise. Drawn from a seeded generator: the same K gives the same gates in every run.

- *today*: gates spread evenly over the processes whatever they wait on (Airflow hands a trigger to any
  triggerer when triggers carry no queue);
- *routed*: one queue per process in ``[leastaction] trigger_queues``, each gate in the process serving the
  queue :func:`~airflow_leastaction.gating.trigger_queues.choose_queue` gives its parents (the product's rule);
- *team*: each team's gates name their team's queue (``trigger_queue=``), the teams dealt over the queues.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: How many parents a gate waits on, and how often (most sensors wait on one upstream task).
PARENT_COUNTS = ((1, 0.60), (2, 0.25), (3, 0.15))
#: The share of a gate's parents drawn from its own team's.
OWN_TEAM = 0.9
#: Gates per parent: a team's upstream tasks are each waited on by several of its gates.
GATES_PER_PARENT = 5
#: Gates of one team (at least one team).
GATES_PER_TEAM = 500
SEED = 35
LAYOUTS = ("today", "routed", "team")


@dataclass(frozen=True)
class Gates:
    """K gates: ``parents[i]`` is parent i's identity; ``gates[g]`` the indexes of gate g's parents."""

    parents: list
    gates: list[tuple[int, ...]]
    teams: int


def team_of(gate: int, teams: int) -> int:
    """The team gate ``gate`` belongs to."""
    return gate % teams


def parent_identity(index: int, team: int):
    from airflow_leastaction.identity import TaskIdentity

    return TaskIdentity(f"parent_{index:07d}", f"team_{team:04d}")


def generate(k: int, seed: int = SEED) -> Gates:
    """K gates over ``max(1, K // GATES_PER_PARENT)`` parents of ``max(1, K // GATES_PER_TEAM)`` teams."""
    rng = random.Random(seed)
    teams = max(1, k // GATES_PER_TEAM)
    n_parents = max(1, k // GATES_PER_PARENT)
    parents = [parent_identity(i, i % teams) for i in range(n_parents)]
    by_team = [range(t, n_parents, teams) for t in range(teams)]
    sizes, weights = zip(*PARENT_COUNTS, strict=True)
    gates = []
    for g in range(k):
        own = by_team[team_of(g, teams)] or range(n_parents)
        want = min(rng.choices(sizes, weights)[0], n_parents)
        chosen: dict[int, None] = {}
        while len(chosen) < want:
            pool = own if rng.random() < OWN_TEAM else range(n_parents)
            chosen[pool[rng.randrange(len(pool))]] = None
        gates.append(tuple(chosen))
    return Gates(parents, gates, teams)


def queues(processes: int) -> tuple[str, ...]:
    """``[leastaction] trigger_queues`` of the routed layout: one queue per process."""
    return tuple(f"triggerer_{n}" for n in range(processes))


def place(gates: Gates, processes: int, layout: str) -> list[int]:
    """The process each gate waits in under ``layout``."""
    k = len(gates.gates)
    if layout == "today":  # in no order of team or parents: the order triggers reach the triggerers
        order = list(range(k))
        random.Random(SEED + 1).shuffle(order)
        out = [0] * k
        for n, g in enumerate(order):
            out[g] = n % processes
        return out
    if layout == "team":
        return [team_of(g, gates.teams) % processes for g in range(k)]
    if layout != "routed":
        raise ValueError(f"unknown layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    from airflow_leastaction.gating.trigger_queues import choose_queue

    names = queues(processes)
    index = {q: n for n, q in enumerate(names)}
    return [index[choose_queue([gates.parents[i] for i in gate], names)] for gate in gates.gates]


def own_queue_share(gates: Gates, processes: int, placed: list[int] | None = None) -> float:
    """The share of gates whose parents all hash to the queue the gate is routed to (``placed``: the routed
    placement, if already made)."""
    from airflow_leastaction.gating.trigger_queues import queue_of

    names = queues(processes)
    placed = placed if placed is not None else place(gates, processes, "routed")
    home = [queue_of(p, names) for p in gates.parents]
    inside = sum(all(home[i] == names[n] for i in gate) for gate, n in zip(gates.gates, placed, strict=True))
    return inside / len(gates.gates)


def own_team_share(gates: Gates) -> float:
    """The share of gates whose parents all belong to the gate's own team."""
    inside = sum(all(i % gates.teams == team_of(g, gates.teams) for i in gate) for g, gate in enumerate(gates.gates))
    return inside / len(gates.gates)


def watched(gates: Gates, placement: list[int], processes: int) -> list[int]:
    """Per process, how many distinct parents its gates wait on (what its shared poll reads)."""
    sets: list[set[int]] = [set() for _ in range(processes)]
    for gate, n in zip(gates.gates, placement, strict=True):
        sets[n].update(gate)
    return [len(s) for s in sets]


def shares(gates: Gates, placement: list[int], processes: int) -> list[list[int]]:
    """Per process, the indexes of the gates placed in it."""
    out: list[list[int]] = [[] for _ in range(processes)]
    for g, n in enumerate(placement):
        out[n].append(g)
    return out
