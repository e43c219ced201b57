"""`difftest show` and `difftest explain` (issue 30): every case draws, one
lane per event, legible at its default size, the first difference marked."""

from __future__ import annotations

import json
import os
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from difftest import draw  # noqa: E402
from difftest.__main__ import main  # noqa: E402
from difftest.show import case_picture, read_case  # noqa: E402
from difftest.timeline import Output, picture_of  # noqa: E402
from oracle import parse  # noqa: E402
from oracle.cases import corpus_files  # noqa: E402
from oracle.explain import explain  # noqa: E402
from oracle.model import Advance, Arrive, Event, Jump, Keyed, Spec, Trace  # noqa: E402
from oracle.dialects import case_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OBSERVED = ROOT.parent / "shared" / "esper-observed"
CASES = corpus_files(ROOT / "corpus") + (corpus_files(OBSERVED) if OBSERVED.is_dir() else [])
SVG = "{http://www.w3.org/2000/svg}"
#: cases drawn per kind of spec (a picture costs about 0.3 s; SHOW_ALL_CASES=1 draws every case)
PER_KIND = 3


def _drawn_cases() -> list[Path]:
    """The first PER_KIND cases of each kind of spec (a statement's by its window's kind too)."""
    if os.environ.get("SHOW_ALL_CASES"):
        return CASES
    by_kind: dict[str, list[Path]] = {}
    for path in CASES:
        spec = case_spec(read_case(path)[0])
        window = getattr(spec, "window", None)
        kind = f"{type(spec).__name__}:{type(window).__name__ if isinstance(window, Spec) else ''}"
        by_kind.setdefault(kind, []).append(path)
    return [path for paths in by_kind.values() for path in paths[:PER_KIND]]


def _lanes_expected(path: Path) -> int:
    """One lane per event; a keyed window's (CCL PRIMARY KEY) one per key."""
    case, _ = read_case(path)
    spec = case_spec(case)
    events = [item.event for item in case.trace.items if isinstance(item, Arrive)]
    if isinstance(spec, Keyed):
        return len({tuple(e.get(k) for k in spec.keys) for e in events})
    return len(events)


@pytest.mark.parametrize("path", _drawn_cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_cases_of_every_kind_draw_a_valid_svg_with_a_lane_per_event(path, tmp_path):
    out = tmp_path / "case.svg"
    assert main(["show", str(path), "--out", str(out)]) in (0, 1)
    root = ET.parse(out).getroot()  # valid XML, an SVG
    assert root.tag == f"{SVG}svg"
    ids = [e.get("id", "") for e in root.iter()]
    lanes = {i for i in ids if i.startswith("lane-0-")}
    assert len(lanes) == _lanes_expected(path)
    titles = [e for e in root.iter(f"{SVG}title")]
    assert titles, "no hover text"


def test_hover_text_gives_the_oracles_reason(tmp_path):
    out = tmp_path / "c.svg"
    main(["show", str(ROOT / "corpus/esper/groupwin-time_batch-jump.json"), "--out", str(out)])
    texts = [t.text for t in ET.parse(out).getroot().iter(f"{SVG}title")]
    assert any("why: a jump over several grid points fires once, at the jump target" in t for t in texts)


def _big_trace(groups: int = 4, events: int = 30) -> Trace:
    rnd = random.Random(3)
    items, t = [], 0
    for i in range(events):
        t += rnd.choice([0, 100, 250, 400])
        items.append(Arrive(Event(f"E{i + 1}", {"symbol": f"SYM{rnd.randrange(groups)}"}), time=t))
        if i == events // 2:
            t += 2500
            items.append(Jump(t))
    return Trace([*items, Advance(t + 3000)])


@pytest.mark.parametrize("text", ["#groupwin(symbol)#time_batch(1 sec)", "#groupwin(symbol)#length(3)#time(1 sec)",
                                  "#groupwin(symbol)#unique(id)#length_batch(2)"])
def test_thirty_events_in_four_groups_have_no_overlapping_labels(text):
    spec, trace = parse(text), _big_trace()
    explained = tuple(explain(spec, trace))
    picture = picture_of(spec, trace, [Output("oracle", tuple(e.update for e in explained), explained)], text)
    assert len(picture.panels[0].lanes) == 30
    assert len({lane.group for lane in picture.panels[0].lanes}) == 4
    fig, _ = draw.figure(picture)
    try:
        assert draw.overlapping_labels(fig) == []
    finally:
        draw._pyplot().close(fig)


def test_expected_above_actual_with_the_first_difference(tmp_path):
    raw = json.loads((ROOT / "corpus/esper/groupwin-time_batch-jump.json").read_text())
    raw["expected"][1]["remove"] = []
    path = tmp_path / "found" / "bad.json"
    path.parent.mkdir()
    path.write_text(json.dumps(raw))
    case, has_expected = read_case(path)
    picture = case_picture(case, has_expected)
    assert [p.title for p in picture.panels] == ["expected", "oracle"]
    assert picture.panels[1].difference.index == 1 and picture.panels[0].highlight == 1
    # replay draws a failing finding beside it and names the picture
    assert main(["replay", str(path)]) == 1
    assert (path.parent / "bad.svg").is_file()


def test_equal_outputs_share_a_panel():
    case, has_expected = read_case(ROOT / "corpus/esper/groupwin-time_batch-jump.json")
    picture = case_picture(case, has_expected)
    assert [p.title for p in picture.panels] == ["expected = oracle"]
    assert picture.panels[0].explained is not None


def test_terminal_rendering_and_explain(capsys):
    path = ROOT / "corpus/ccl/keyed-keep-all-duplicate-insert-error.json"
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "== expected = oracle" in shown and "! duplicate insert" in shown
    assert main(["explain", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("  ")]
    assert rows and all("why: " in line for line in rows)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("{not json", "not valid JSON"),
    ('{"name": "x"}', "no 'dialect'"),
])
def test_bad_input_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "case.json"
    if content is not None:
        path.write_text(content)
    for command in (["show", str(path)], ["explain", str(path)], ["show", str(path), "--out", str(tmp_path / "a.svg")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and str(path) in err and "Traceback" not in err


def test_out_must_be_svg_or_png(tmp_path, capsys):
    assert main(["show", str(ROOT / "corpus/esper/groupwin-time_batch-jump.json"), "--out", str(tmp_path / "a.pdf")]) == 2
    assert ".svg or .png" in capsys.readouterr().err


# --------------------------------------------------------------------------- issue 43, item 5


def _figure_texts(picture) -> list[str]:
    fig, _ = draw.figure(picture)
    try:
        assert draw.overlapping_labels(fig) == []
        return [t.get_text() for t in fig.findobj(lambda a: a.__class__.__name__ == "Text") if t.get_text().strip()]
    finally:
        draw._pyplot().close(fig)


def test_a_count_windows_panes_are_labelled_by_ordinal_and_rows_not_a_time_range():
    """A COUNTWINDOW pane's bounds are both the clock: `pane 2: 5 rows` (the
    window's run under a query) or `#1 3 rows` (an update), never `#-1 [0, 0)`."""
    case, has_expected = read_case(ROOT / "corpus/kuiper/count-having-and-window-bounds.json")
    picture = case_picture(case, has_expected)
    assert [(box.number, box.label) for box in picture.panels[0].panes] == [
        (None, "pane 1: 5 rows"), (None, "pane 2: 5 rows"), (None, "pane 3: 5 rows")]
    texts = _figure_texts(picture)
    assert "pane 2: 5 rows" in texts and not any(t.startswith("#-1") or "[500, 500)" in t for t in texts)
    case, has_expected = read_case(ROOT / "corpus/kuiper/count-sliding-5-2.json")
    assert [(box.number, box.label) for box in case_picture(case, has_expected).panels[0].panes] == [
        (0, "5 rows"), (1, "5 rows")]


def test_dense_count_panes_and_time_panes_of_a_query_keep_their_labels_apart():
    trace = [{"event": {"id": f"E{i}"}, "time": 100 * i} for i in range(1, 13)]
    for query in ("SELECT count(*) AS c FROM demo GROUP BY COUNTWINDOW(2,1)",
                  "SELECT count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)"):
        raw = {"name": "dense", "dialect": "kuiper", "window": query.split("GROUP BY ")[1], "query": query,
               "input": trace}
        from oracle.cases import case_from_json

        picture = case_picture(case_from_json({**raw, "expected": []}), False)
        texts = _figure_texts(picture)  # no two labels overlap
        assert not any(t.startswith("#-1") for t in texts)


def test_a_long_statement_title_wraps_whole_and_the_legend_keeps_its_items_whole():
    query = ("select irstream symbol, sum(price) as total, count(*) as n, avg(price) as average, min(price) as low, "
             "max(price) as high from E#length(2) group by symbol having sum(price) > 10 and count(*) > 1")
    raw = {"name": "long-title", "dialect": "esper", "window": "#length(2)", "query": query,
           "input": [{"event": {"id": f"E{i}", "symbol": "X", "price": float(i)}} for i in range(1, 4)]}
    from oracle.cases import case_from_json

    picture = case_picture(case_from_json({**raw, "expected": []}), False)
    texts = _figure_texts(picture)
    title = [t for t in texts if len(t) > 20 and t in query]
    assert len(title) >= 2 and " ".join(title) == query  # every word, the HAVING too, nothing cut with "..."
    legend = [t for t in texts if "arrival" in t or "update n" in t or "never inserted" in t]
    items = [item for line in legend for item in line.split("   ")]
    assert sorted(items) == sorted(draw.LEGEND)
