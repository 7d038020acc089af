"""Terminal views (rich) of problems, results and test cases, built from the JSON alone: known
fields in the page's order, anything else the server adds shown generically after them."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

VERDICTS: dict[str, tuple[str, str, str]] = {
    # verdict: (label, icon, rich style)
    "accepted": ("Accepted", "✓", "bold green"),
    "wrong_answer": ("Wrong answer", "✗", "bold red"),
    "runtime_error": ("Runtime error", "!", "bold red"),
    "time_limit_exceeded": ("Time limit exceeded", "⧗", "bold red"),
    "memory_limit_exceeded": ("Memory limit exceeded", "!", "bold red"),
    "output_limit_exceeded": ("Output limit exceeded", "!", "bold red"),
    "compile_error": ("Does not compile", "!", "bold red"),
    "internal_error": ("Grader error (not your fault)", "?", "bold yellow"),
}
MARKS: dict[str, tuple[str, str]] = {
    "passed": ("✓", "green"),
    "failed": ("✗", "red"),
    "error": ("!", "red"),
    "not_checked": ("–", "dim"),
}
MODES = {"examples": "public examples only", "submit": "all tests"}
# Test-table columns the page shows, in its order; other scalar fields follow.
TEST_COLUMNS = ("name", "visibility", "status", "message", "max_error", "max_error_index")
SHAPE_FIELDS = ("expected_shape", "actual_shape")
# Per-cell data drawn as a picture in HTML, too big for a table cell.
PICTURE_FIELDS = ("error_grid",)
TRACEBACK_LINES = 30
SHORT_COLUMNS = ("status",)


def verdict_label(verdict: object) -> str:
    return (
        VERDICTS[verdict][0] if isinstance(verdict, str) and verdict in VERDICTS else str(verdict)
    )


def queue_text(place: dict[str, Any]) -> str:
    """A queued submission's place, as the page says it: "41 ahead of you, about 1 min"."""
    ahead = place.get("ahead")
    seconds = place.get("estimate_seconds")
    where = "next in line" if ahead == 0 else f"{ahead} ahead of you"
    if not isinstance(seconds, int | float):
        return f"Queued: {where}"
    about = f"{max(1, round(seconds))} s" if seconds < 60 else f"{round(seconds / 60)} min"
    return f"Queued: {where}, about {about}"


def humanize(key: str) -> str:
    return key.replace("_", " ").capitalize()


def fmt(value: Any) -> str:
    """A cell: numbers to 4 significant digits, lists as [a, b], None as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt(v)}" for k, v in value.items())
    return str(value)


def shape_text(shape: Any) -> str:
    """Python's spelling, as the page writes it: ``(2,)``, ``(2, 3)``, ``()``."""
    if not isinstance(shape, list):
        return "?"
    return repr(tuple(int(d) if isinstance(d, int) else d for d in shape)).replace("'", "")


def is_empty(value: Any) -> bool:
    """No content for a cell: a single-output result's ``outputs: []`` says nothing per row."""
    return value is None or value == "" or value == [] or value == {}


def is_scalar(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, int | float | str) for v in value)
    return isinstance(value, int | float | str | bool) or value is None


def test_columns(tests: list[dict[str, Any]]) -> list[str]:
    """The known columns present, then every other field that fits in a cell."""
    keys: dict[str, None] = {}
    for test in tests:
        keys.update(dict.fromkeys(k for k, v in test.items() if not is_empty(v)))
    columns = [k for k in TEST_COLUMNS if k in keys]
    if any(k in keys for k in SHAPE_FIELDS):
        columns.append("shape")
    skip = set(TEST_COLUMNS) | set(SHAPE_FIELDS) | set(PICTURE_FIELDS) | {"seconds"}
    columns += [k for k in keys if k not in skip and all(is_scalar(t.get(k)) for t in tests)]
    if any(dicts(t.get("outputs")) for t in tests):
        columns.append("outputs")
    if "seconds" in keys:
        columns.append("seconds")
    # A column empty in every row (no largest error when shapes differ) only takes room.
    return [c for c in columns if any(test_cell(t, c) for t in tests)]


def test_cell(test: dict[str, Any], column: str) -> str:
    if column == "shape":
        expected, actual = test.get("expected_shape"), test.get("actual_shape")
        if expected is None and actual is None:
            return ""
        return f"{shape_text(expected)} / {shape_text(actual)}"
    if column == "status":
        status = str(test.get("status", ""))
        return f"{MARKS.get(status, ('?', ''))[0]} {status}"
    if column == "outputs":
        # Several outputs: each one's verdict by name, the detail is in the JSON and the HTML.
        return ", ".join(
            f"{o.get('name', '?')} {MARKS.get(str(o.get('status')), ('?', ''))[0]}"
            for o in dicts(test.get("outputs"))
        )
    if column == "seconds" and isinstance(test.get("seconds"), int | float):
        return f"{test['seconds'] * 1000:.0f} ms"
    return fmt(test.get(column))


def column_title(column: str) -> str:
    return {
        "shape": "Shape (exp. / yours)",
        "max_error": "Largest error",
        "max_error_index": "At",
        "name": "Case",
        "seconds": "Time",
    }.get(column, humanize(column))


def summary_line(result: dict[str, Any]) -> str:
    bits = []
    if isinstance(result.get("score"), int | float):
        bits.append(f"score {round(result['score'] * 100)}%")
    elif result.get("score_hidden"):
        bits.append("score hidden until published")
    # An assignment's feedback policy may show the hidden cases only as a count, or nothing.
    if result.get("view") == "summary":
        bits.append(
            f"{result.get('hidden_passed')} of {result.get('hidden_total')} hidden cases passed"
        )
    elif result.get("view") == "verdict":
        bits.append("verdict only until published")
    if result.get("mode") in MODES:
        bits.append(MODES[result["mode"]])
    timings = result.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("total"), int | float):
        bits.append(f"graded in {timings['total']:.2f} s")
    return " · ".join(bits)


def requirement_titles(result: dict[str, Any]) -> dict[str, str]:
    return {
        str(r.get("id")): str(r.get("title", r.get("id")))
        for r in result.get("requirements") or []
        if isinstance(r, dict)
    }


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def tail_lines(text: str, limit: int = TRACEBACK_LINES) -> str:
    lines = text.splitlines()
    return "\n".join(["…", *lines[-limit:]]) if len(lines) > limit else text


# -- rich renderables ----------------------------------------------------------------------------


def result_renderable(result: dict[str, Any]) -> RenderableType:
    if result.get("status") not in (None, "done"):
        return Text(f"Submission {result.get('id')} is {result.get('status')}.")
    verdict = result.get("verdict")
    label, icon, style = VERDICTS.get(str(verdict), (str(verdict), "?", "bold yellow"))
    parts: list[RenderableType] = [
        Text.assemble((f"{icon} {label}", style), ("  " + summary_line(result), "dim"))
    ]
    requirements = dicts(result.get("requirements"))
    if requirements:
        parts.append(Text("\nRequirements", style="bold"))
        for r in requirements:
            status = str(r.get("status", ""))
            mark, mark_style = MARKS.get(status, ("?", ""))
            line = Text.assemble(
                ("  " + mark + " ", mark_style),
                str(r.get("title", r.get("id", ""))),
                (f" ({status.replace('_', ' ')})", "dim"),
            )
            if r.get("detail"):
                line.append(f"\n      {r['detail']}", style="dim")
            parts.append(line)
    diagnoses = dicts(result.get("diagnoses"))
    if diagnoses:
        titles = requirement_titles(result)
        parts.append(Text("\nWhat went wrong", style="bold"))
        parts += [diagnosis_panel(d, titles) for d in diagnoses]
    tests = dicts(result.get("tests"))
    if tests:
        parts.append(test_table(tests))
    for key, title in (("error", "Error"), ("stdout", "stdout"), ("stderr", "stderr")):
        value = result.get(key)
        if isinstance(value, str) and value:
            parts.append(Text(f"\n{title}", style="bold"))
            parts.append(Text(tail_lines(value) if key == "error" else value))
            if result.get(f"{key}_truncated"):
                parts.append(Text(f"({key} was cut at the size limit)", style="dim"))
    if result.get("id"):
        parts.append(Text(f"\nSubmission {result['id']}", style="dim"))
    return Group(*parts)


def diagnosis_panel(d: dict[str, Any], requirement_titles: dict[str, str]) -> Panel:
    body = Text(str(d.get("explanation", "")))
    if d.get("hint"):
        body.append("\nHint: ", style="bold")
        body.append(str(d["hint"]))
    if d.get("evidence"):
        body.append(f"\nEvidence: {d['evidence']}", style="dim")
    if d.get("certain") is False:
        body.append("\n(one of several equally good explanations: check it)", style="yellow")
    subtitle = None
    requirement = d.get("requirement")
    if requirement:
        subtitle = f"breaks: {requirement_titles.get(str(requirement), str(requirement))}"
    return Panel(
        body,
        title=Text(f"{d.get('title', '')} [{d.get('code', '')}]"),
        title_align="left",
        subtitle=Text(subtitle) if subtitle else None,
        subtitle_align="left",
        border_style="red",
    )


def test_table(tests: list[dict[str, Any]]) -> Table:
    passed = sum(1 for t in tests if t.get("status") == "passed")
    # No vertical rules: the room goes to the columns (a result may add several).
    table = Table(
        title=f"Tests ({passed} of {len(tests)} passed)", title_justify="left", box=box.SIMPLE_HEAD
    )
    columns = test_columns(tests)
    for column in columns:
        # Free text wraps; the short columns stay on one line so the table stays readable.
        wraps = column not in SHORT_COLUMNS
        table.add_column(
            column_title(column),
            overflow="fold",
            no_wrap=not wraps,
            ratio=1 if column == "message" else None,
            min_width=12 if column == "message" else None,
        )
    for t in tests:
        style = MARKS.get(str(t.get("status")), ("", ""))[1]
        table.add_row(*(Text(test_cell(t, c)) for c in columns), style=style or None)
    return table


def math_as_code(markdown: str) -> str:
    """TeX left as TeX: ``$...$`` and ``$$...$$`` become code so markdown does not eat their
    ``_`` and ``*``."""
    markdown = re.sub(
        r"\$\$(.+?)\$\$", lambda m: f"\n```tex\n{m.group(1).strip()}\n```\n", markdown, flags=re.S
    )
    return re.sub(r"(?<![\\`$])\$([^$\n]+?)\$", lambda m: f"`${m.group(1)}$`", markdown)


def problem_markdown(problem: dict[str, Any]) -> str:
    """The statement plus the signature and requirements, as Markdown with TeX math."""
    parts = [str(problem.get("statement_markdown", ""))]
    if problem.get("signature"):
        parts.append(f"## Signature\n\n```python\n{problem['signature']}\n```")
    scalars = [p for p in dicts(problem.get("params")) if p.get("kind") in ("int", "float")]
    if scalars:
        parts.append("## Numbers\n\n" + "\n".join(scalar_line(p) for p in scalars))
    requirements = dicts(problem.get("requirements"))
    if requirements:
        lines = [
            f"{i}. **{r.get('title', '')}** (`{r.get('id', '')}`): {r.get('text', '')}"
            for i, r in enumerate(requirements, 1)
        ]
        parts.append("## Requirements\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def scalar_line(param: dict[str, Any]) -> str:
    """An int or float parameter with its bounds (exact: the values a case must respect)."""
    what = "an integer" if param.get("kind") == "int" else "a number"
    line = f"- `{param.get('name')}`: {what} from {param.get('minimum')} to {param.get('maximum')}"
    if param.get("default") is not None:
        line += f", default {param['default']!r}"
    return line + (" (or None)" if param.get("optional") else "")


def problem_renderable(problem: dict[str, Any]) -> RenderableType:
    return Markdown(math_as_code(problem_markdown(problem)))


def problems_table(problems: Iterable[dict[str, Any]]) -> Table:
    table = Table(title="Problems", title_justify="left")
    for column in ("ID", "Title", "Difficulty", "Summary"):
        table.add_column(column, overflow="fold", no_wrap=column == "ID")
    for p in problems:
        table.add_row(*(Text(fmt(p.get(k))) for k in ("id", "title", "difficulty", "summary")))
    return table


def submissions_table(rows: list[dict[str, Any]]) -> Table:
    """The instructors' list: one line per submission, newest first."""
    title = Text(f"Submissions ({len(rows)})")
    # Tight padding: the whole id (for `tj submissions regrade ID`) and the verdict stay on one
    # line in 120 columns; the problem and the diagnoses wrap when they must.
    table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False)
    for column in ("ID", "Created", "Problem", "Account", "Verdict", "Score", "Diagnoses", "Run"):
        keep = column in ("ID", "Created", "Verdict", "Score", "Run")
        table.add_column(column, no_wrap=keep, overflow="fold", header_style="bold underline")
    for r in rows:
        # Month, day and time (UTC): the list is newest first; --json has the whole date.
        created = str(r.get("created_at", ""))[5:16].replace("T", " ")
        verdict = verdict_label(r.get("verdict")) if r.get("verdict") else str(r.get("status"))
        score = r.get("score")
        who = r.get("user_name") or ("anonymous" if r.get("user_id") is None else r["user_id"])
        table.add_row(
            *(
                Text(cell)
                for cell in (
                    str(r.get("id", "")),
                    created,
                    str(r.get("problem_id", "")),
                    str(who),
                    verdict,
                    f"{round(score * 100)}%" if isinstance(score, int | float) else "",
                    ", ".join(str(c) for c in r.get("diagnoses") or []),
                    str(r.get("run", "")),
                )
            )
        )
    return table


def case_row(case: dict[str, Any]) -> dict[str, Any]:
    """A test case as ``tj cases list`` shows it: the inputs' shapes and values in one column,
    the output's shape (or each named output's) in one "Output shape(s)" column, the other
    fields as they are."""
    row: dict[str, Any] = {}
    for key, value in case.items():
        if key == "shapes":
            arrays = [f"{k} {shape_text(v)}" for k, v in (value or {}).items()]
            scalars = [f"{k}={fmt(v)}" for k, v in (case.get("scalars") or {}).items()]
            row["inputs"] = ", ".join(arrays + scalars)
        elif key == "output_shape":
            named = case.get("output_shapes") or {}
            if case.get("raises"):
                row["output_shape(s)"] = f"raises {case['raises']}"
            elif named:
                row["output_shape(s)"] = ", ".join(f"{k} {shape_text(v)}" for k, v in named.items())
            else:
                row["output_shape(s)"] = shape_text(value)
        elif key == "created_at" and isinstance(value, str):
            row[key] = value[:16].replace("T", " ")  # to the minute: the table has little room
        elif key not in ("scalars", "output_shapes"):
            row[key] = value
    return row


def record_cell(value: Any) -> str:
    """A list of objects (e.g. warnings) by their codes or names; anything else as ``fmt``."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return ", ".join(str(v.get("code", v.get("name", "…"))) for v in value)
    return fmt(value)


# Columns that name a row: never folded, so a name can be read (and searched) whole.
NAME_COLUMNS = frozenset({"id", "name"})


def record_columns(rows: list[dict[str, Any]]) -> list[str]:
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(k for k, v in row.items() if not is_empty(v)))
    return list(keys)


def records_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Any list of JSON objects: one column per field that some row fills (a server may add
    fields, most of them empty for most rows, and a wide table would fold every cell)."""
    keys = record_columns(rows)
    table = Table(title=Text(title), title_justify="left")
    for column in keys:
        named = column in NAME_COLUMNS
        table.add_column(humanize(column), overflow="fold", no_wrap=named)
    for row in rows:
        table.add_row(*(Text(record_cell(row.get(column))) for column in keys))
    return table


# What a student sees of a report under the feedback policy, in words.
FEEDBACK_WORDS = {
    "visible": "full report",
    "summary": "public cases, hidden ones as a count",
    "verdict": "verdict only",
}


def attempts_left_text(attempts: dict[str, Any]) -> str:
    used, allowed = attempts.get("attempts_used"), attempts.get("attempts_allowed")
    if not isinstance(allowed, int):
        return f"{used} used, no limit"
    left = max(0, allowed - used) if isinstance(used, int) else "?"
    return f"{used} of {allowed} used, {left} left"


def attempts_row(attempts: dict[str, Any]) -> dict[str, Any]:
    """``.../attempts`` of one problem as a table row."""
    return {
        "problem": attempts.get("problem_id"),
        "attempts": attempts_left_text(attempts),
        "credit now": attempts.get("rule"),
        "open": attempts.get("open"),
        "due": fmt(attempts.get("due_at")),
        "feedback": FEEDBACK_WORDS.get(str(attempts.get("feedback")), attempts.get("feedback")),
    }


def attempts_line(attempts: dict[str, Any]) -> str:
    """One line: "multi-head-attention: 1 of 3 used, 2 left · on time: 100 % · due ..."."""
    row = attempts_row(attempts)
    state = row["credit now"] if row["open"] else f"{row['credit now']} (not accepting)"
    return (
        f"{row['problem']}: attempts {row['attempts']} · {state} · due {row['due']} · "
        f"feedback: {row['feedback']}"
    )


def assignment_row(assignment: dict[str, Any]) -> dict[str, Any]:
    """An assignment as a table row: my own due date and credit now when I am a student."""
    mine = assignment.get("mine") if isinstance(assignment.get("mine"), dict) else None
    problems = ", ".join(str(p.get("problem_id")) for p in dicts(assignment.get("problems")))
    allowed = (mine or assignment).get("attempts_allowed" if mine else "max_attempts")
    return {
        "id": assignment.get("id"),
        "course": assignment.get("course_id"),
        "title": assignment.get("title"),
        "problems": problems,
        "due": fmt((mine or assignment).get("due_at")),
        "credit now": mine.get("rule") if mine else None,
        "attempts": allowed if isinstance(allowed, int) else "no limit",
        "feedback": assignment.get("feedback"),
    }


def to_text(renderable: RenderableType, width: int | None = None) -> str:
    """Plain text (no colour codes) for a REPL or a log; as wide as the terminal, at least 100."""
    width = width or max(100, shutil.get_terminal_size((120, 24)).columns)
    buffer = io.StringIO()
    # Not Jupyter's display: there rich would show it as its own output instead of returning it.
    console = Console(
        file=buffer, width=width, color_system=None, force_terminal=False, force_jupyter=False
    )
    console.print(renderable)
    return buffer.getvalue().rstrip() + "\n"
