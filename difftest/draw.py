"""A `difftest.timeline.Picture` drawn with matplotlib (headless, Agg): SVG
with each mark's explanation as hover text (an SVG `<title>`), or PNG.

Layout rules (sizes in inches, fonts in points, so a picture is legible at
its default size whatever the case): a unit of the axis is 0.3 in (an
update's slot, wide enough for its number at 6.5 pt); a lane is 0.2 in (an
event id at 7 pt); lane labels sit in a left margin as wide as the longest
label; group headings take a line of their own; time labels are written
upright under their own column, one per instant. Nothing is placed where
another label can be: every text has a slot of its own.

matplotlib is the optional extra `show` (`pip install window-oracle[show]`).
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

from difftest.timeline import Panel, Picture
from oracle.errors import WindowOracleError

UNIT = 0.30  # in, one axis unit
LANE = 0.20  # in, one lane
HEAD = 0.50  # in, a panel's heading and update numbers
PANE_TRACK = 0.30  # in, one row of pane boxes
AXIS = 0.75  # in, the time labels and item marks under the last panel (at least: longer labels, taller)
AXIS_CHAR = 0.055  # in, a character of an upright 6.5 pt time label
TABLE_LINE = 0.16  # in
MAX_TABLE = 60  # rows listed; the rest counted
MIN_PLOT = 6.0  # in: a short case's axis is stretched to this width
#: the legend's items: a line of the legend holds whole items, never half of one
LEGEND = ("^ advance", "> jump (shaded: the span it skips)", "* set", "o arrival",
          "bar: inserted .. removed (faded: still held)", "| removed", "x removed, never inserted", "D update (CCL)",
          "X error", "square: in a pane", "#n: update n")
TITLE_LINE = 0.17  # in, a line of the 9 pt title
FONT = 7.0

COLOURS = {"bar": "#4C72B0", "arrival": "#555555", "removed": "#C44E52", "update": "#DD8452", "error": "#C44E52",
           "pane": "#55A868", "jump": "#F6C85F", "advance": "#8C8C8C", "set": "#8172B3", "diff": "#C44E52",
           "step": "#BBBBBB", "group": "#F2F2F2"}

SVG_NS = "http://www.w3.org/2000/svg"


class ShowError(WindowOracleError):
    """A picture that cannot be made: matplotlib missing, a file that cannot be written."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ShowError("drawing needs matplotlib: pip install 'window-oracle[show]' (or matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _rows(panel: Panel) -> list[tuple[str, object]]:
    """The panel's lines top to bottom: ("group", heading) or ("lane", index)."""
    lines: list[tuple[str, object]] = []
    group = object()
    for i, lane in enumerate(panel.lanes):
        if lane.group is not None and lane.group != group:
            lines.append(("group", lane.group))
        group = lane.group
        lines.append(("lane", i))
    return lines


PANE_CHAR = 0.045  # in, a character of a pane's 5.5 pt label


def _pane_label(box) -> str:
    return (f"#{box.number} " if box.number is not None else "") + box.label


def _pane_rows(panel: Panel, unit: float = UNIT) -> list[int]:
    """A row for each pane box, so overlapping panes (hopping) and labels (a
    count window's panes, `unit` in per axis unit) do not cover each other."""
    ends: list[float] = []
    rows = []
    for box in panel.panes:
        end = max(box.end, box.start + 0.05 + len(_pane_label(box)) * PANE_CHAR / unit)
        row = next((r for r, taken in enumerate(ends) if taken <= box.start), len(ends))
        if row == len(ends):
            ends.append(end)
        else:
            ends[row] = end
        rows.append(row)
    return rows


def render(picture: Picture, path: Path) -> None:
    """Write `picture` to `path`, SVG or PNG by its suffix."""
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ShowError(f"{path}: the picture's file must end in .svg or .png")
    with _pyplot().rc_context({"svg.fonttype": "none"}):  # text as text: smaller, faster, selectable
        fig, titles = figure(picture)
    try:
        if suffix == ".png":
            fig.savefig(path, dpi=100)
        else:
            buffer = io.StringIO()
            with _pyplot().rc_context({"svg.fonttype": "none"}):
                fig.savefig(buffer, format="svg")
            path.write_text(_with_titles(buffer.getvalue(), titles), encoding="utf-8")
    except OSError as exc:
        raise ShowError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        _pyplot().close(fig)


def figure(picture: Picture):
    """The matplotlib figure of `picture`, and the hover text of its artists by id."""
    plt = _pyplot()
    titles: dict[str, str] = {}
    lane_chars = max([len(lane.label) for p in picture.panels for lane in p.lanes] + [8])
    group_chars = max([len(lane.group or "") for p in picture.panels for lane in p.lanes] + [0])
    left = 0.3 + min(max(lane_chars * 0.06, group_chars * 0.075), 4.0)
    unit = max(UNIT, MIN_PLOT / picture.width)
    plot_width = picture.width * unit
    fig_width = left + plot_width + 0.4
    tables = [p.table for p in picture.panels]
    heights = []
    for panel in picture.panels:
        pane_rows = max(_pane_rows(panel, unit), default=-1) + 1
        heights.append(HEAD + pane_rows * PANE_TRACK + max(len(_rows(panel)), 1) * LANE + 0.1)
    table_lines = sum(min(len(t), MAX_TABLE) + (len(t) > MAX_TABLE) + 1 for t in tables if t)
    title = _wrap(picture.title, int((fig_width - 0.3) / 0.09))  # a long statement on several lines, none cut
    legend = _items_in_lines(LEGEND, int((fig_width - 0.3) / 0.052))
    title_extra = (len(title) - 1) * TITLE_LINE
    legend_height = 0.11 + len(legend) * 0.12
    axis_height = max(AXIS, 0.2 + AXIS_CHAR * max((len(picture.time_label(t)) for t, _, _ in picture.columns),
                                                   default=0))
    fig_height = 0.7 + title_extra + sum(heights) + axis_height + legend_height + table_lines * TABLE_LINE + 0.2
    fig = plt.figure(figsize=(fig_width, fig_height))
    W, H = fig.get_size_inches()
    chars = int((W - 0.3) / 0.062)  # 7 pt text fits this many characters across
    for line_number, line in enumerate(title):
        fig.text(0.15 / W, 1 - (0.25 + line_number * TITLE_LINE) / H, line, fontsize=9, weight="bold",
                 va="center", family="monospace")
    if picture.subtitle:
        fig.text(0.15 / W, 1 - (0.48 + title_extra) / H, _fit(picture.subtitle, chars), fontsize=7, va="center",
                 color="#444444")
    top = 0.7 + title_extra
    axes = []
    for number, (panel, height) in enumerate(zip(picture.panels, heights)):
        ax = fig.add_axes((left / W, 1 - (top + height) / H, plot_width / W, height / H))
        _panel(ax, picture, panel, number, height, titles, unit)
        axes.append(ax)
        top += height
    _axis(fig, axes[-1], picture, left, top, axis_height, W, H, titles)
    top += axis_height
    for line_number, line in enumerate(legend):
        fig.text(0.15 / W, 1 - (top + 0.08 + line_number * 0.12) / H, line, fontsize=6, color="#555555", va="center")
    top += legend_height
    for number, panel in enumerate(picture.panels):
        if panel.table:
            top = _table(fig, panel, number, top, W, H, titles)
    return fig, titles


def overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of visible texts of `fig` whose boxes overlap (a legibility check)."""
    renderer = fig.canvas.get_renderer()
    boxes = []
    for text in fig.findobj(lambda a: a.__class__.__name__ == "Text"):
        if text.get_visible() and text.get_text().strip():
            boxes.append((text.get_text(), text.get_window_extent(renderer).expanded(0.98, 0.9)))
    found = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if box_a.overlaps(box_b):
                found.append((a, b))
    return found


def _panel(ax, picture: Picture, panel: Panel, number: int, height: float, titles: dict[str, str],
           unit: float = UNIT) -> None:
    lines = _rows(panel)
    pane_rows = _pane_rows(panel, unit)
    n_pane_rows = max(pane_rows, default=-1) + 1
    track = n_pane_rows * PANE_TRACK / LANE  # lanes' worth of pane track
    head = HEAD / LANE
    total = height / LANE
    ax.set_xlim(0, picture.width)
    ax.set_ylim(total, 0)
    ax.axis("off")
    y_of = {}
    for row, (kind, what) in enumerate(lines):
        y = head + track + row + 0.5
        if kind == "group":
            ax.axhspan(y - 0.5, y + 0.5, color=COLOURS["group"], lw=0)
            ax.text(-0.15, y, str(what), ha="right", va="center", fontsize=FONT, weight="bold", clip_on=False)
        else:
            y_of[what] = y
            label = ax.text(-0.15, y, panel.lanes[what].label, ha="right", va="center", fontsize=FONT,
                            family="monospace", clip_on=False)
            gid = f"lane-{number}-{what}"
            label.set_gid(gid)
            titles[gid] = f"lane {panel.lanes[what].label}" + (f" ({panel.lanes[what].group})" if panel.lanes[what].group else "")
            ax.axhline(y, color="#EEEEEE", lw=0.5, zorder=0)
    bottom = head + track + len(lines)
    heading = panel.title + (f"  ({panel.lanes_from})" if panel.lanes_from else "")
    if panel.difference is not None:
        heading += f"   first difference: {panel.difference.headline()}"
    ax.text(0, 0.7, heading, fontsize=8, weight="bold", va="center", clip_on=False,
            color=COLOURS["diff"] if panel.difference is not None else "black")
    for tick in picture.ticks:  # jumps: the span skipped
        if tick.kind == "jump":
            x0, x1 = picture.x_of(tick.before), picture.x_of(tick.time)
            span = ax.axvspan(x0, x1, ymin=0, ymax=1 - head / total, color=COLOURS["jump"], alpha=0.25, lw=0)
            gid = f"jump-{number}-{tick.index}"
            span.set_gid(gid)
            titles[gid] = f"item {tick.index}: {tick.label} (from {tick.before}): the clock is set, due timers fire once"
    diff_index = panel.highlight
    for step in panel.steps:
        differs = step.number == diff_index
        line = ax.plot([step.x, step.x], [head - 0.2, bottom], color=COLOURS["diff" if differs else "step"],
                       lw=1.6 if differs else 0.6, zorder=1)[0]
        gid = f"step-{number}-{step.number}"
        line.set_gid(gid)
        titles[gid] = step.title
        text = ax.text(step.x, head - 0.45, f"#{step.number}", ha="center", va="bottom", fontsize=6.5,
                       color=COLOURS["diff"] if differs else "#333333", weight="bold" if differs else "normal")
        text.set_gid(gid + "-n")
        titles[gid + "-n"] = step.title
    if diff_index is not None and diff_index >= len(panel.steps):  # a missing update: mark the end
        ax.text(picture.width, head - 0.45, f"#{diff_index} missing", ha="right", va="bottom", fontsize=6.5,
                color=COLOURS["diff"], weight="bold")
    for index, (box, row) in enumerate(zip(panel.panes, pane_rows)):
        y = head + row * PANE_TRACK / LANE + 0.3
        h = PANE_TRACK / LANE * 0.6
        rect = ax.add_patch(_rect(box.start, y, max(box.end - box.start, 0.05), h, COLOURS["pane"]))
        gid = f"pane-{number}-{index}"
        rect.set_gid(gid)
        titles[gid] = box.title
        ax.text(box.start + 0.05, y + h / 2, _pane_label(box), fontsize=5.5, va="center", ha="left",
                color="#1E4D2B", clip_on=True)
    for i, bar in enumerate(panel.bars):
        y = y_of[bar.lane]
        end = bar.end if bar.end is not None else picture.width
        line = ax.plot([bar.start, end], [y, y], color=COLOURS["bar"], lw=4.5, solid_capstyle="butt", zorder=2,
                       alpha=1.0 if bar.end is not None else 0.55)[0]
        gid = f"bar-{number}-{i}"
        line.set_gid(gid)
        titles[gid] = bar.title + (f"\n{bar.end_title}" if bar.end_title else "\nstill held at the end")
        if bar.end is not None:
            cap = ax.plot([end], [y], marker="|", color="black", markersize=7, zorder=3)[0]
            cap.set_gid(gid + "-end")
            titles[gid + "-end"] = bar.end_title
        if bar.label:
            ax.text(bar.start + 0.1, y - 0.28, bar.label, fontsize=5.5, va="bottom", color="#333333")
    styles = {"arrival": ("o", 3), "removed": ("x", 5), "update": ("D", 4), "error": ("X", 6), "pane": ("s", 4)}
    for i, mark in enumerate(panel.marks):
        marker, size = styles[mark.kind]
        artist = ax.plot([mark.x], [y_of[mark.lane]], marker=marker, markersize=size, color=COLOURS[mark.kind],
                         linestyle="none", zorder=4)[0]
        gid = f"mark-{number}-{i}"
        artist.set_gid(gid)
        titles[gid] = mark.title


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(chars - 3, 1)] + "..."


def _wrap(text: str, chars: int) -> list[str]:
    """`text` in lines of at most `chars` characters, broken between words."""
    import textwrap

    return textwrap.wrap(text, max(chars, 20)) or [""]


def _items_in_lines(items: tuple[str, ...], chars: int, gap: str = "   ") -> list[str]:
    """`items` in lines of at most `chars` characters (an item longer than a
    line has one of its own): an item is never split."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(gap) + len(item) <= chars:
            lines[-1] += gap + item
        else:
            lines.append(item)
    return lines


def _rect(x, y, w, h, colour):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor=colour, alpha=0.35, edgecolor=colour, lw=0.8)


def _axis(fig, ax, picture: Picture, left: float, top: float, height: float, W: float, H: float,
          titles: dict[str, str]) -> None:
    """Time labels, one per instant, and the trace's clock items under the last panel."""
    axis = fig.add_axes((left / W, 1 - (top + height) / H, ax.get_position().width, height / H))
    axis.set_xlim(0, picture.width)
    axis.set_ylim(height / AXIS, 0)  # y in units of AXIS inches, however tall the labels make it
    axis.axis("off")
    axis.plot([0, picture.width], [0.02, 0.02], color="black", lw=0.8)
    for t, x0, w in picture.columns:
        x = picture.x_of(t)
        axis.plot([x, x], [0.02, 0.08], color="black", lw=0.6)
        axis.text(x, 0.12, picture.time_label(t), rotation=90, ha="center", va="top", fontsize=6.5)
    unit = "clock, ms" + (f" after {picture.base}" if picture.base else "")
    axis.text(-0.15, 0.12, unit, ha="right", va="top", fontsize=6.5, clip_on=False)
    for tick in picture.ticks:
        if tick.kind == "event":
            continue
        marker = {"advance": "^", "jump": ">", "set": "*"}[tick.kind]
        artist = axis.plot([picture.x_of(tick.time)], [0.02], marker=marker, markersize=6, color=COLOURS[tick.kind],
                           linestyle="none", clip_on=False)[0]
        gid = f"item-{tick.index}"
        artist.set_gid(gid)
        titles[gid] = f"item {tick.index}: {tick.label}"


def _table(fig, panel: Panel, number: int, top: float, W: float, H: float, titles: dict[str, str]) -> float:
    """The panel's rows that are not events, one line each; returns the new top."""
    x = 0.25 / W
    fig.text(x, 1 - (top + TABLE_LINE / 2) / H, f"{panel.title}: rows", fontsize=7, weight="bold", va="center")
    top += TABLE_LINE
    diff = panel.difference.index if panel.difference is not None else None
    for i, row in enumerate(panel.table[:MAX_TABLE]):
        sign = {"insert": "+", "remove": "-", "update": "~", "error": "!"}[row.side.split(".")[-1]]
        text = fig.text(x, 1 - (top + TABLE_LINE / 2) / H, f"#{row.number:<3} {sign} {row.text}", fontsize=6.5,
                        family="monospace", va="center", color=COLOURS["diff"] if row.number == diff else "black")
        gid = f"row-{number}-{i}"
        text.set_gid(gid)
        titles[gid] = row.title
        top += TABLE_LINE
    if len(panel.table) > MAX_TABLE:
        fig.text(x, 1 - (top + TABLE_LINE / 2) / H, f"... {len(panel.table) - MAX_TABLE} more rows", fontsize=6.5,
                 va="center", color="#555555")
        top += TABLE_LINE
    return top


def _with_titles(svg: str, titles: dict[str, str]) -> str:
    """The SVG with a `<title>` first in each element whose id has a title (hover text)."""
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ET.fromstring(svg)
    for element in root.iter():
        title = titles.get(element.get("id", ""))
        if title:
            node = ET.Element(f"{{{SVG_NS}}}title")
            node.text = title
            element.insert(0, node)
    return '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + ET.tostring(root, encoding="unicode")


__all__ = ["render", "ShowError"]
