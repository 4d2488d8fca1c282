"""Laying out a graph as server-rendered SVG: columns left to right, boxes sized to their labels. Pure.

Both graphs of the UI (a task's catalog lineage, a DAG's dependencies) give each node a column; nodes of
a column stack top to bottom, each box as wide as its longer line (within bounds; a longer line is cut
with an ellipsis and shown whole in its tooltip), edges are cubic curves from a box's right side to the
next box's left side, each edge at its own height on both sides (ordered by the other end's height, so
edges do not cross at a box), and an edge's label sits just before the box it enters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: Pixels: average glyph width at the graphs' 12 px font, box padding, box bounds, gaps.
CHAR_W, PAD, MIN_W, MAX_W, NODE_H, ROW_GAP, COL_GAP, MARGIN = 7, 10, 120, 260, 42, 14, 70, 16
MAX_CHARS = (MAX_W - 2 * PAD) // CHAR_W


def fit(text: str, chars: int = MAX_CHARS) -> str:
    """``text`` cut to ``chars`` characters with an ellipsis when longer."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


@dataclass
class Box:
    """A node's box: ``lines`` (title, subtitle) at column ``column``; position set by :func:`lay_out`."""

    key: object
    column: int
    lines: tuple[str, ...]
    order: tuple = ()
    x: int = 0
    y: int = 0
    width: int = MIN_W
    height: int = NODE_H

    @property
    def shown(self) -> tuple[str, ...]:
        return tuple(fit(line) for line in self.lines)


@dataclass
class Curve:
    parent: object
    child: object
    path: str = ""
    #: Where the edge's label ends (text-anchor end): just before the box it enters.
    label_x: int = 0
    label_y: int = 0


@dataclass
class Canvas:
    boxes: dict = field(default_factory=dict)
    width: int = 0
    height: int = 0


def lay_out(boxes: Iterable[Box], links: Iterable[tuple[object, object]]) -> tuple[Canvas, list[Curve]]:
    """Place ``boxes`` by column and draw ``links`` (parent key, child key) between them."""
    canvas = Canvas({b.key: b for b in boxes})
    if not canvas.boxes:
        return canvas, []
    columns: dict[int, list[Box]] = {}
    for box in canvas.boxes.values():
        box.width = max(MIN_W, min(MAX_W, 2 * PAD + CHAR_W * max(len(line) for line in box.shown)))
        columns.setdefault(box.column, []).append(box)
    x = MARGIN
    for column in sorted(columns):
        stack = sorted(columns[column], key=lambda b: b.order)
        width = max(b.width for b in stack)
        for i, box in enumerate(stack):
            box.x, box.y = x, MARGIN + i * (NODE_H + ROW_GAP)
        x += width + COL_GAP
    canvas.width = x - COL_GAP + MARGIN
    canvas.height = MARGIN * 2 + max(len(c) for c in columns.values()) * (NODE_H + ROW_GAP) - ROW_GAP
    drawn = [(p, c) for p, c in links if p in canvas.boxes and c in canvas.boxes]
    outs, ins = _ports(canvas.boxes, drawn)
    return canvas, [_curve(canvas.boxes, p, c, outs[(p, c)], ins[(p, c)]) for p, c in drawn]


def _ports(boxes: Mapping, links: list[tuple]) -> tuple[dict, dict]:
    """The height at which each link leaves its parent and enters its child."""
    outs: dict = {}
    ins: dict = {}
    for mine, other, found in ((0, 1, outs), (1, 0, ins)):
        by_box: dict = {}
        for link in links:
            by_box.setdefault(link[mine], []).append(link)
        for key, group in by_box.items():
            group.sort(key=lambda link: (boxes[link[other]].y, boxes[link[other]].x))
            box = boxes[key]
            for i, link in enumerate(group):
                found[link] = box.y + round(box.height * (i + 1) / (len(group) + 1))
    return outs, ins


def _curve(boxes: Mapping, parent, child, y1: int, y2: int) -> Curve:
    a, b = boxes[parent], boxes[child]
    x1, x2 = a.x + a.width, b.x
    if x2 <= x1:  # same column or backwards: leave from the bottom, come in from the left
        x1, y1 = a.x + a.width // 2, a.y + a.height
    bend = max(30, abs(x2 - x1) // 2)
    path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"
    return Curve(parent, child, path, x2 - 4, y2 - 2)


def depths(nodes: Iterable, links: Iterable[tuple[object, object]]) -> dict:
    """Each node's column: the length of the longest path reaching it (sources at 0)."""
    depth = {n: 0 for n in nodes}
    edges = [(p, c) for p, c in links if p in depth and c in depth and p != c]
    for _ in range(len(depth)):  # longest paths in a DAG settle in at most |nodes| rounds
        changed = False
        for p, c in edges:
            if depth[c] < depth[p] + 1:
                depth[c] = depth[p] + 1
                changed = True
        if not changed:
            break
    return depth
