"""Drawing a `PipelineGraph` with matplotlib: boxes and arrows, no graphviz.

Columns are the async scheduler's levels: middleware in one column may start together in
async mode, and left to right is the order it imposes. Solid arrows carry fields read in the
same iteration; dashed ones fields read from the previous iteration or after a `yield`.
"""
from __future__ import annotations

import textwrap
from typing import Any, Dict, List, Tuple

from .figures import require_matplotlib
from .graph import SAME, PipelineGraph

_ROLE_COLOURS = {"collector": "#dbe9f6", "learner": "#fde3c8", "evaluator": "#dcefd9", None: "#eeeeee"}
_BOX_W, _GAP_X, _GAP_Y, _LINE = 3.3, 1.3, 0.45, 0.145


def _box_lines(graph: PipelineGraph, i: int) -> List[str]:
    stage = graph.stages[i]
    c = stage.contract
    lines = [f"[{i}] {stage.name}"]
    if c is None:
        return lines + ["undeclared: reads and writes everything"]

    def field_lines(head: str, names: Any) -> List[str]:
        text = f"{head}: " + (", ".join(sorted(names)) or "—")
        return textwrap.wrap(text, 44, subsequent_indent="    ")

    lines += field_lines("reads", c.reads) + field_lines("writes", c.writes)
    if c.reads_after:
        lines += field_lines("after yield", c.reads_after)
    if c.emits or c.finishes:
        events = ", ".join(sorted(c.emits))
        finish = "may finish the run" if c.finishes else ""
        lines.append("; ".join(x for x in (f"emits {events}" if events else "", finish) if x))
    return lines


def layout(graph: PipelineGraph) -> Dict[int, Tuple[float, float, float, float]]:
    """(x, y, width, height) of each stage's box: column = async level, top to bottom by position."""
    columns: Dict[int, List[int]] = {}
    for i, level in enumerate(graph.levels):
        columns.setdefault(level, []).append(i)
    boxes = {}
    for level, members in columns.items():
        y = 0.0
        for i in members:
            h = _LINE * len(_box_lines(graph, i)) + 0.3
            boxes[i] = (level * (_BOX_W + _GAP_X), -y - h, _BOX_W, h)
            y += h + _GAP_Y
    return boxes


def draw_graph(graph: PipelineGraph) -> Any:
    """A matplotlib Figure of `graph` (save it with `figures.save_figure`)."""
    require_matplotlib("rlpipe graph --out")
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    boxes = layout(graph)
    width = max(x + w for x, _, w, _ in boxes.values()) + 0.4
    depth = -min(y for _, y, _, _ in boxes.values()) + 0.4
    fig = Figure(figsize=(width + 0.4, depth + 1.3))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-depth - 0.9, 0.6)
    ax.set_axis_off()
    ax.text(0, 0.3, graph.title, fontsize=10, weight="bold", va="center")
    for i, (x, y, w, h) in boxes.items():
        c = graph.stages[i].contract
        role = None if c is None or c.role is None else c.role.value
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=_ROLE_COLOURS.get(role, "#eeeeee"),
                                    edgecolor="#444444", linewidth=0.8, zorder=3))
        lines = _box_lines(graph, i)
        ax.text(x + 0.08, y + h - 0.1, lines[0], fontsize=7.5, weight="bold", va="top", zorder=4)
        ax.text(x + 0.08, y + h - 0.1 - _LINE * 1.1, "\n".join(lines[1:]), fontsize=6.3,
                va="top", family="monospace", linespacing=1.05, zorder=4)
    _draw_edges(ax, graph, boxes)
    ax.text(0, -depth - 0.45,
            "columns: middleware in one column may start together in async mode (left to right: "
            "the order it imposes); [n]: position in the chain\nsolid arrow: field read in the "
            "same iteration; dashed: read from the previous iteration or after yield; colour: "
            "role (blue collector, orange learner, green evaluator)", fontsize=6.5, va="center",
            color="#333333")
    return fig


def _draw_edges(ax: Any, graph: PipelineGraph, boxes: Dict[int, Tuple[float, float, float, float]]
                ) -> None:
    grouped: Dict[Tuple[int, int, bool], List[str]] = {}
    for e in graph.edges:
        if e.source != e.target:
            grouped.setdefault((e.source, e.target, e.when == SAME), []).append(e.field)
    for k, ((src, dst, same), fields) in enumerate(sorted(grouped.items())):
        sx, sy, sw, sh = boxes[src]
        dx, dy, dw, dh = boxes[dst]
        if same:
            start, end, style, colour = (sx + sw, sy + sh / 2), (dx, dy + dh / 2), "-", "#1f4e79"
            rad = 0.0
        else:
            start, end, style, colour = (sx + sw / 2, sy), (dx + dw / 2, dy + dh), "--", "#999999"
            rad = 0.25
        ax.annotate("", xy=end, xytext=start,
                    arrowprops=dict(arrowstyle="-|>", color=colour, linestyle=style, lw=0.8,
                                    shrinkA=2, shrinkB=2, connectionstyle=f"arc3,rad={rad}"),
                    zorder=1)
        if same:  # labels at alternating points along the arrow, so fan-ins do not stack them
            t = (0.35, 0.5, 0.65)[k % 3]
            mx, my = start[0] + t * (end[0] - start[0]), start[1] + t * (end[1] - start[1])
            ax.text(mx, my, "\n".join(textwrap.wrap(", ".join(sorted(fields)), 22)), fontsize=5.5,
                    ha="center", va="center", color=colour, zorder=2,
                    bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none",
                              alpha=0.85))
