"""The web page's result panel as one self-contained HTML fragment for Jupyter: verdict,
requirement checklist, diagnosis cards, the picture (shape mismatch or error heat map, inline
SVG) and the test table. Every value from the server is escaped."""

from __future__ import annotations

from html import escape
from typing import Any

from tensorjudge_client.view import (
    MARKS,
    VERDICTS,
    column_title,
    dicts,
    fmt,
    humanize,
    record_cell,
    record_columns,
    requirement_titles,
    summary_line,
    tail_lines,
    test_cell,
    test_columns,
)

TONES = {"accepted": "#1a7f37", "internal_error": "#9a6700"}
BAD = "#cf222e"
STYLE = """<style>
.tj-result{font-family:system-ui,sans-serif;line-height:1.4;max-width:60em}
.tj-result .tj-verdict{padding:.5em .8em;border-radius:6px;color:#fff;font-weight:600}
.tj-result .tj-meta{font-weight:400;opacity:.9;margin-left:.6em}
.tj-result ul.tj-checklist{list-style:none;padding-left:0}
.tj-result .tj-card{border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:6px;
 padding:.5em .8em;margin:.5em 0}
.tj-result .tj-card h4{margin:.2em 0}
.tj-result code{background:#f6f8fa;padding:0 .25em;border-radius:3px}
.tj-result table{border-collapse:collapse;font-size:90%}
.tj-result th,.tj-result td{border:1px solid #d0d7de;padding:.2em .5em;text-align:left}
.tj-result pre{background:#f6f8fa;padding:.5em;overflow:auto;max-height:24em}
.tj-result .tj-passed{color:#1a7f37}.tj-result .tj-failed,.tj-result .tj-error{color:#cf222e}
.tj-result .tj-not_checked{color:#57606a}
</style>"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def banner(result: dict[str, Any]) -> str:
    verdict = str(result.get("verdict"))
    label, icon, _ = VERDICTS.get(verdict, (verdict, "?", ""))
    colour = TONES.get(verdict, BAD)
    return (
        f'<div class="tj-verdict" data-verdict="{_e(verdict)}" style="background:{colour}">'
        f'{_e(icon)} {_e(label)}<span class="tj-meta">{_e(summary_line(result))}</span></div>'
    )


def checklist(requirements: list[dict[str, Any]]) -> str:
    if not requirements:
        return ""
    items = []
    for r in requirements:
        status = str(r.get("status", ""))
        mark = MARKS.get(status, ("?", ""))[0]
        detail = f"<br><small>{_e(r['detail'])}</small>" if r.get("detail") else ""
        items.append(
            f'<li class="tj-{_e(status)}" data-requirement="{_e(r.get("id", ""))}">'
            f"{_e(mark)} {_e(r.get('title', r.get('id', '')))} "
            f"<small>({_e(status.replace('_', ' '))})</small>{detail}</li>"
        )
    return f'<h3>Requirements</h3><ul class="tj-checklist">{"".join(items)}</ul>'


def cards(diagnoses: list[dict[str, Any]], titles: dict[str, str]) -> str:
    if not diagnoses:
        return ""
    count = f" ({len(diagnoses)} findings)" if len(diagnoses) > 1 else ""
    out = [f"<h3>What went wrong{count}</h3>"]
    for d in diagnoses:
        requirement = d.get("requirement")
        breaks = (
            f" <small>breaks: {_e(titles.get(str(requirement), requirement))}</small>"
            if requirement
            else ""
        )
        hint = f"<p><strong>Hint:</strong> {_e(d['hint'])}</p>" if d.get("hint") else ""
        evidence = (
            f"<details><summary>Evidence</summary><p>{_e(d['evidence'])}</p></details>"
            if d.get("evidence")
            else ""
        )
        unsure = (
            "<p><em>One of several equally good explanations: check it.</em></p>"
            if d.get("certain") is False
            else ""
        )
        out.append(
            f'<div class="tj-card" data-code="{_e(d.get("code", ""))}">'
            f"<h4>{_e(d.get('title', ''))} <code>{_e(d.get('code', ''))}</code>{breaks}</h4>"
            f"<p>{_e(d.get('explanation', ''))}</p>{hint}{evidence}{unsure}</div>"
        )
    return "".join(out)


# -- pictures ------------------------------------------------------------------------------------


def _last_two(shape: list[int]) -> tuple[int, int]:
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    return shape[-2], shape[-1]


def heat_colour(t: float) -> str:
    """White to deep red, as on the page."""
    v = max(0.0, min(1.0, t))
    return f"rgb({255 - round(v * 75)},{round(255 * (1 - v) * 0.95)},{round(255 * (1 - v) * 0.9)})"


def error_picture(test: dict[str, Any]) -> str:
    """Heat map of |yours - expected| over the output's last two axes (or the location of the
    largest error when there is no grid), with the largest error outlined."""
    found = test.get("error_grid")
    grid: list[list[float]] = found if isinstance(found, list) else []
    use_grid = bool(grid) and isinstance(grid[0], list)
    shape = test.get("expected_shape") or test.get("actual_shape") or []
    rows, cols = (len(grid), len(grid[0])) if use_grid else _last_two(list(shape))
    if not rows or not cols:
        return ""
    cell = max(3.0, min(28.0, 360 / cols, 260 / rows))
    ox, oy = 40, 22
    width, height = max(330.0, ox + cols * cell + 20), oy + rows * cell + 24
    peak = max((abs(v) for row in grid for v in row), default=0.0) if use_grid else 0.0
    rects = []
    for r in range(rows):
        for c in range(cols):
            value = abs(grid[r][c]) if use_grid else 0.0
            fill = heat_colour(value / peak if peak > 0 else 0.0) if use_grid else "#f6f8fa"
            rects.append(
                f'<rect x="{ox + c * cell:.1f}" y="{oy + r * cell:.1f}" width="{cell:.1f}" '
                f'height="{cell:.1f}" fill="{fill}" stroke="#8c959f" stroke-width="0.5"/>'
            )
    index = test.get("max_error_index")
    if isinstance(index, list) and index:
        ri, ci = (index[-2], index[-1]) if len(index) >= 2 else (0, index[0])
        if ri < rows and ci < cols:
            rects.append(
                f'<rect x="{ox + ci * cell:.1f}" y="{oy + ri * cell:.1f}" width="{cell:.1f}" '
                f'height="{cell:.1f}" fill="none" stroke="#24292f" stroke-width="2.5"/>'
            )
    name = _e(test.get("name", ""))
    label = "|yours − expected| per cell" if use_grid else "Output cells (largest error marked)"
    where = "[" + ", ".join(str(i) for i in index) + "]" if isinstance(index, list) else ""
    caption = (
        f"Where {name} differs from the expected output (darker is further off; peak "
        f"{peak:.4g}). Largest error {_e(fmt(test.get('max_error')))} at {where}."
        if use_grid
        else f"Largest error in {name}: {_e(fmt(test.get('max_error')))} at output{where}."
    )
    return (
        f'<figure data-picture="{"heatmap" if use_grid else "error-location"}">'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">'
        f"<title>Error over the output of {name}</title>"
        f'<text x="{ox}" y="14" font-size="12">{label}</text>{"".join(rects)}'
        f'<text x="{ox - 6}" y="{oy + 10}" font-size="10" text-anchor="end">row 0</text>'
        f'<text x="{ox}" y="{oy + rows * cell + 16:.0f}" font-size="10">col 0</text></svg>'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def shape_picture(expected: list[int], actual: list[int]) -> str:
    """Expected and actual shapes side by side, the last two axes drawn to scale."""
    boxes = []
    for k, (label, shape) in enumerate((("Expected", expected), ("Yours", actual))):
        rows, cols = _last_two(shape)
        cell = max(2.0, min(24.0, 150 / max(cols, 1), 120 / max(rows, 1)))
        x = 28 + k * 220
        other = actual if k == 0 else expected
        dims = ", ".join(
            f"{d}*" if i >= len(other) or other[i] != d else str(d) for i, d in enumerate(shape)
        )
        boxes.append(
            f'<text x="{x}" y="16" font-size="12">{label}</text>'
            f'<rect x="{x}" y="30" width="{cols * cell:.1f}" height="{rows * cell:.1f}" '
            f'fill="{"#ddf4ff" if k == 0 else "#ffebe9"}" stroke="#57606a"/>'
            f'<text x="{x}" y="{30 + rows * cell + 18:.0f}" font-size="12">({_e(dims)})</text>'
        )
    height = 30 + max(_last_two(s)[0] * 24 for s in (expected, actual)) + 30
    return (
        '<figure data-picture="shape">'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="440" height="{min(height, 200)}" '
        f'viewBox="0 0 440 {min(height, 200)}" role="img"><title>Expected shape '
        f"{_e(expected)}, your shape {_e(actual)}</title>{''.join(boxes)}</svg>"
        f"<figcaption>Expected {_e(tuple(expected))}, got {_e(tuple(actual))}; dimensions "
        "marked * differ.</figcaption></figure>"
    )


def picture(tests: list[dict[str, Any]]) -> str:
    """The page's one picture: a shape mismatch first, else the first wrong public output."""
    for t in tests:
        expected, actual = t.get("expected_shape"), t.get("actual_shape")
        if isinstance(expected, list) and isinstance(actual, list) and expected != actual:
            return shape_picture(expected, actual)
    for t in tests:
        if t.get("status") != "passed" and (
            isinstance(t.get("error_grid"), list) or isinstance(t.get("max_error_index"), list)
        ):
            return error_picture(t)
    return ""


def table(tests: list[dict[str, Any]]) -> str:
    if not tests:
        return ""
    columns = test_columns(tests)
    passed = sum(1 for t in tests if t.get("status") == "passed")
    head = "".join(f"<th>{_e(column_title(c))}</th>" for c in columns)
    body = "".join(
        f'<tr class="tj-{_e(t.get("status", ""))}" data-case="{_e(t.get("name", ""))}">'
        + "".join(f"<td>{_e(test_cell(t, c))}</td>" for c in columns)
        + "</tr>"
        for t in tests
    )
    return (
        f"<h3>Tests ({passed} of {len(tests)} passed)</h3>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def output(result: dict[str, Any]) -> str:
    parts = []
    for key, title in (("error", "Error"), ("stdout", "stdout"), ("stderr", "stderr")):
        value = result.get(key)
        if isinstance(value, str) and value:
            text = tail_lines(value) if key == "error" else value
            parts.append(f"<h4>{title}</h4><pre>{_e(text)}</pre>")
    return "<h3>Output</h3>" + "".join(parts) if parts else ""


def result_html(result: dict[str, Any]) -> str:
    if result.get("status") not in (None, "done"):
        return f"<p>Submission {_e(result.get('id'))} is {_e(result.get('status'))}.</p>"
    tests = dicts(result.get("tests"))
    sections = [
        banner(result),
        checklist(dicts(result.get("requirements"))),
        cards(dicts(result.get("diagnoses")), requirement_titles(result)),
        picture(tests),
        table(tests),
        output(result),
        f"<p><small>Submission {_e(result['id'])}</small></p>" if result.get("id") else "",
    ]
    return f'{STYLE}<div class="tj-result">{"".join(s for s in sections if s)}</div>'


def records_html(title: str, rows: list[dict[str, Any]]) -> str:
    """Any list of JSON objects as a table, the columns of ``view.records_table``."""
    columns = record_columns(rows)
    head = "".join(f"<th>{_e(humanize(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(record_cell(row.get(c)))}</td>" for c in columns) + "</tr>"
        for row in rows
    )
    return (
        f'{STYLE}<div class="tj-result"><table><caption>{_e(title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )
