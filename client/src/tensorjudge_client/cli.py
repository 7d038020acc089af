"""``tj``: the command line. Exit codes: 0 success (for ``run``/``submit``: accepted), 1 graded
but not accepted (or a refused ``start``), 2 bad usage or an unreadable file, 3 the request
failed (server down, 404, 413, 422, ...)."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from tensorjudge_client import view
from tensorjudge_client.credentials import forget, store, stored
from tensorjudge_client.errors import JudgeError
from tensorjudge_client.judge import Judge
from tensorjudge_client.models import Records
from tensorjudge_client.transport import DEFAULT_TIMEOUT, DEFAULT_URL
from tensorjudge_client.version import __version__

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
SUBMISSION_FILTERS = (
    "problem",
    "verdict",
    "diagnosis",
    "since",
    "until",
    "user_id",
    "mode",
    "course",
)
PIPE_WIDTH = 120

PHASE_DONE = {
    "sandbox": "Sandbox run finished ({s}); grading: comparing and diagnosing",
    "compare": "Outputs compared ({s})",
    "diagnose": "Diagnosis done ({s})",
}
STATUS_TEXT = {
    "queued": "Queued: waiting for a grader",
    "running": "Running your code in the sandbox",
    "done": "Graded",
}


def describe_event(kind: str, data: dict[str, Any]) -> str:
    """One progress line per event of the stream."""
    if kind == "status":
        status = str(data.get("status"))
        text = STATUS_TEXT.get(status, status)
        attempt = data.get("attempt")
        if status == "running" and isinstance(attempt, int) and attempt > 1:
            text += f" (attempt {attempt})"
        return text
    if kind == "queue":
        return view.queue_text(data)
    if kind == "phase":
        seconds = data.get("seconds")
        took = f"{seconds:.2f} s" if isinstance(seconds, int | float) else "?"
        phase = str(data.get("phase"))
        return PHASE_DONE.get(phase, phase + " finished ({s})").format(s=took)
    return f"{kind}: {json.dumps(data)}"


class Progress:
    """Shows the stream on stderr (stdout stays the result): a spinner on a terminal, one line
    per event always."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last = ""
        self.spinner: Status | None = None
        if console.is_terminal:
            self.spinner = console.status("Submitting")
            self.spinner.start()

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        text = describe_event(kind, data)
        if text == self.last:
            return  # the stream repeats the state the POST already answered
        self.last = text
        if self.spinner is not None:
            self.spinner.update(text)
        self.console.print(Text(f"· {text}", style="dim"))

    def stop(self) -> None:
        if self.spinner is not None:
            self.spinner.stop()


def _read_code(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


class UsageError(Exception):
    pass


class Cli:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        # Redirected output is read by people too: wider than rich's 80-column default.
        # No markup: names and messages from the server are printed as they are.
        width = None if sys.stdout.isatty() else PIPE_WIDTH
        self.out = Console(highlight=False, markup=False, width=width)
        self.err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
        self.judge = Judge(args.url, timeout=args.timeout)

    def emit_json(self, data: Any) -> None:
        # Plain print: rich would wrap long lines and break the JSON.
        print(json.dumps(data, indent=2, ensure_ascii=False))

    def problems(self) -> int:
        found = self.judge.problems()
        if self.args.json:
            self.emit_json(found.raw)
        else:
            self.out.print(view.problems_table(found.raw))
        return EXIT_OK

    def show(self) -> int:
        problem = self.judge.problem(self.args.problem)
        if self.args.json:
            self.emit_json(problem.raw)
        else:
            self.out.print(view.problem_renderable(problem.raw))
        return EXIT_OK

    def start(self) -> int:
        problem = self.judge.problem(self.args.problem)
        target = Path(self.args.file or f"{problem.id.replace('-', '_')}.py")
        if target.exists() and not self.args.force:
            self.err.print(f"{target} exists; not overwritten (use --force to replace it)")
            return EXIT_REJECTED
        starter = problem.starter(self.args.framework)
        if starter is None:
            self.err.print(f"{problem.title} is not offered in {self.args.framework} here")
            return EXIT_REJECTED
        # The server grades a file in the framework its imports show: nothing else to remember.
        target.write_text(starter, encoding="utf-8")
        self.err.print(
            f"Wrote the starter code of {problem.title} to {target}. "
            f"Then: tj run {problem.id} {target}   /   tj submit {problem.id} {target}"
        )
        return EXIT_OK

    def grade(self, examples_only: bool) -> int:
        code = _read_code(self.args.file)
        where = self.assignment_ref()
        if where is not None:
            # Before sending: what this attempt is worth and how many are left.
            self.print_attempts(self.judge.attempts(where[1], self.args.problem, course=where[0]))
        progress = Progress(self.err)
        try:
            result = self.judge.submit(
                self.args.problem,
                code,
                examples_only=examples_only,
                on_event=progress,
                assignment=None if where is None else where[1],
                course=None if where is None else where[0],
                force=bool(getattr(self.args, "force", False)),
            )
        finally:
            progress.stop()
        self.print_result(result.raw)
        if where is not None and not examples_only:
            self.print_attempts(self.judge.attempts(where[1], self.args.problem, course=where[0]))
        return EXIT_OK if result.accepted else EXIT_REJECTED

    def assignment_ref(self) -> tuple[int | None, int] | None:
        assignment = getattr(self.args, "assignment", None)
        course = getattr(self.args, "course", None)
        if assignment is None:
            if course is not None:
                raise UsageError("--course goes with --assignment")
            return None
        return course, assignment

    def print_attempts(self, found: Sequence[Any]) -> None:
        # stderr: stdout stays the result (or its JSON).
        for attempts in found:
            self.err.print(view.attempts_line(attempts.raw))

    def print_records(self, found: Records[Any]) -> int:
        if self.args.json:
            self.emit_json(found.raw)
        else:
            self.out.print(view.records_table(found.title, found.rows))
        return EXIT_OK

    def courses(self) -> int:
        return self.print_records(self.judge.courses())

    def assignments(self) -> int:
        return self.print_records(self.judge.assignments(self.args.course))

    def assignment(self) -> int:
        found = self.judge.assignment(self.args.assignment, course=self.args.course)
        attempts = self.judge.attempts(found)
        if self.args.json:
            self.emit_json({**found.raw, "attempts": attempts.raw})
        else:
            self.out.print(view.records_table(found.title, [view.assignment_row(found.raw)]))
            self.out.print(view.records_table(attempts.title, attempts.rows))
        return EXIT_OK

    def run(self) -> int:
        return self.grade(examples_only=True)

    def submit(self) -> int:
        return self.grade(examples_only=False)

    def result(self) -> int:
        result = self.judge.result(self.args.submission)
        self.print_result(result.raw)
        if result.get("status") != "done":
            return EXIT_REJECTED
        return EXIT_OK if result.accepted else EXIT_REJECTED

    def print_result(self, raw: dict[str, Any]) -> None:
        if self.args.json:
            self.emit_json(raw)
        else:
            self.out.print(view.result_renderable(raw))

    def cases_list(self) -> int:
        listing = self.judge.cases(self.args.problem, course=self.args.course)
        if self.args.json:
            self.emit_json(listing)
        else:
            title = (
                f"Test cases of {listing.get('problem_id', self.args.problem)} "
                f"(test-set version {listing.get('test_set_version', '?')})"
            )
            rows = [view.case_row(c) for c in view.dicts(listing.get("cases"))]
            self.out.print(view.records_table(title, rows))
        return EXIT_OK

    def filters(self) -> dict[str, Any]:
        found = {name: getattr(self.args, name, None) for name in SUBMISSION_FILTERS}
        for name in ("since", "until"):
            # A day alone means its start (UTC); the server takes date and time.
            value = found[name]
            if isinstance(value, str) and len(value) == len("2026-11-01"):
                found[name] = value + "T00:00:00Z"
        return found

    def submissions_list(self) -> int:
        page = self.judge.submissions(
            limit=self.args.limit, cursor=self.args.cursor, **self.filters()
        )
        if self.args.json:
            self.emit_json(page)
            return EXIT_OK
        rows = view.dicts(page.get("items"))
        self.out.print(view.submissions_table(rows))
        if page.get("next_cursor"):
            self.err.print(f"More: add --cursor {page['next_cursor']}")
        return EXIT_OK

    def submissions_regrade(self) -> int:
        if self.args.all_matching == bool(self.args.submission):
            raise UsageError("give a SUBMISSION_ID or --all-matching (with filters), not both")
        if self.args.submission:
            queued = self.judge.regrade(self.args.submission)
            if self.args.json:
                self.emit_json(queued)
            else:
                run = queued.get("run")
                self.out.print(f"Queued {queued.get('id')} for grading again (run {run})")
            return EXIT_OK
        filters = self.filters()
        if not self.args.yes:
            # The count first, so nobody regrades a whole server by a typo in a filter.
            page = self.judge.submissions(limit=200, cursor=None, **filters)
            count = len(view.dicts(page.get("items")))
            more = "+" if page.get("next_cursor") else ""
            if not sys.stdin.isatty():
                raise UsageError(
                    f"{count}{more} submissions match; add --yes to regrade them without asking"
                )
            answer = input(f"Regrade {count}{more} matching submissions? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                self.err.print("Nothing regraded.")
                return EXIT_REJECTED
        counts = self.judge.regrade_matching(**filters)
        if self.args.json:
            self.emit_json(counts)
        else:
            full = " (stopped: the queue is full)" if counts.get("queue_full") else ""
            self.out.print(
                f"{counts.get('matched')} matched: {counts.get('queued')} queued, "
                f"{counts.get('skipped')} skipped{full}"
            )
        return EXIT_OK

    def cases_add(self) -> int:
        path = Path(self.args.file)
        if not path.is_file():
            raise UsageError(f"{path} is not a file")
        added = self.judge.add_case(
            self.args.problem,
            path,
            name=self.args.name,
            visibility=self.args.visibility,
            weight=self.args.weight,
            course=self.args.course,
        )
        self.report_case("Added", added)
        for warning in view.dicts(added.get("warnings")):
            if not self.args.json:
                self.out.print(f"  warning {warning.get('code')}: {warning.get('message')}")
        return EXIT_OK

    def cases_remove(self) -> int:
        removed = self.judge.remove_case(self.args.problem, self.args.case, course=self.args.course)
        self.report_case("Removed", removed)
        return EXIT_OK

    def login(self) -> int:
        url = self.judge.url
        timeout = self.args.timeout
        if self.args.token:
            with Judge(url, token=self.args.token, timeout=timeout) as judge:
                user = judge.me()
            if user is None:
                raise UsageError("the server does not know this token")
            path = store(url, self.args.token, name=None)
        else:
            email = self.args.email or input("Email: ").strip()
            if self.args.password_stdin:
                password = sys.stdin.readline().rstrip("\r\n")
            else:
                password = getpass.getpass("Password: ")
            name = self.args.name or (
                f"tj on {socket.gethostname()[:40]} {time.strftime('%Y-%m-%d %H:%M:%S')}"
            )
            # No stored token in this request: the exchange needs none, and an old revoked one
            # must not stand in the way of signing in again.
            with Judge(url, token="", timeout=timeout) as judge:
                created = judge.create_token(email, password, name)
            with Judge(url, token=created["secret"], timeout=timeout) as judge:
                user = judge.me()
            token = created.get("token") or {}
            path = store(url, created["secret"], token_id=token.get("id"), name=name)
        who = user.get("name") if user else "?"
        self.err.print(f"Signed in to {url} as {who}; the token is stored in {path}")
        return EXIT_OK

    def logout(self) -> int:
        url = self.judge.url
        entry = stored(url)
        if entry is None:
            self.err.print(f"Not signed in to {url}.")
            return EXIT_OK
        token_id = entry.get("token_id")
        if isinstance(token_id, int):
            # Revoked on the server too, so a copy of the file is worth nothing.
            try:
                with Judge(url, token=str(entry["token"]), timeout=self.args.timeout) as judge:
                    judge.revoke_token(token_id)
            except JudgeError as exc:
                self.err.print(f"tj: the token could not be revoked on the server ({exc})")
        forget(url)
        self.err.print(f"Signed out of {url}; the stored token is deleted.")
        return EXIT_OK

    def report_case(self, verb: str, case: dict[str, Any]) -> None:
        if self.args.json:
            self.emit_json(case)
        else:
            self.out.print(
                f"{verb} case {case.get('name')} (id {case.get('id')}); test-set version "
                f"{case.get('test_set_version')}"
            )


def build_parser() -> argparse.ArgumentParser:
    # Options work before or after the command: `tj --url U submit ...`, `tj submit ... --json`.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help=f"the server (default: TJ_URL or {DEFAULT_URL})",
    )
    common.add_argument(
        "--timeout",
        type=float,
        default=argparse.SUPPRESS,
        help=f"seconds per request (default {DEFAULT_TIMEOUT:g})",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the raw JSON"
    )
    parser = argparse.ArgumentParser(
        prog="tj",
        parents=[common],
        description="TensorJudge from a terminal. `tj login` stores a token for a server; "
        "TJ_TOKEN overrides it.",
        epilog="Exit codes: 0 success/accepted, 1 not accepted, 2 usage, 3 request failed.",
    )
    parser.add_argument("--version", action="version", version=f"tj {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[Cli], int], help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    command("problems", Cli.problems, "list the problems")
    show = command("show", Cli.show, "a problem's statement (math left as TeX)")
    show.add_argument("problem", metavar="ID")
    start = command("start", Cli.start, "write a problem's starter code to FILE")
    start.add_argument("problem", metavar="ID")
    start.add_argument("file", metavar="FILE", nargs="?", help="default: <id>.py")
    start.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    start.add_argument(
        "--framework",
        choices=("numpy", "torch"),
        default="numpy",
        help="the starter's framework (a file is graded in the one its imports show)",
    )
    for name, examples_only, text in (
        ("run", True, "grade FILE on the public examples only"),
        ("submit", False, "grade FILE on every test (exit 0 only when accepted)"),
    ):
        sub = command(name, Cli.run if examples_only else Cli.submit, text)
        sub.add_argument("problem", metavar="ID")
        sub.add_argument("file", metavar="FILE")
        sub.add_argument(
            "--assignment",
            type=int,
            metavar="N",
            help="in assignment N, for credit (`tj assignments` lists them; TJ_TOKEN or login)",
        )
        sub.add_argument("--course", type=int, metavar="N", help="its course (default: found)")
        if not examples_only:
            sub.add_argument(
                "--force",
                action="store_true",
                help="spend a graded attempt even on code identical to an earlier one",
            )
    command("courses", Cli.courses, "my courses and my role in each")
    assignments = command(
        "assignments", Cli.assignments, "my assignments: due date, credit now, attempts"
    )
    assignments.add_argument("--course", type=int, metavar="N", help="one course's only")
    assignment = command(
        "assignment",
        Cli.assignment,
        "one assignment: per problem, attempts used and left, credit now, feedback",
    )
    assignment.add_argument("assignment", type=int, metavar="N")
    assignment.add_argument("--course", type=int, metavar="N", help="its course (default: found)")
    result = command("result", Cli.result, "show a submission's result again")
    result.add_argument("submission", metavar="SUBMISSION_ID")

    login = command("login", Cli.login, "sign in and store a personal access token")
    login.add_argument("--email", help="default: asked")
    login.add_argument("--token", help="store this token (from the account page) instead")
    login.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    login.add_argument("--name", help="the new token's name (default: tj on <host> <time>)")
    command("logout", Cli.logout, "revoke and delete the stored token of this server")

    listing = commands.add_parser(
        "submissions", help="instructors: find practice submissions, regrade them (TJ_TOKEN)"
    )
    listing_commands = listing.add_subparsers(
        dest="submissions_command", required=True, metavar="COMMAND"
    )
    for name, handler, text in (
        ("list", Cli.submissions_list, "practice submissions (or --course N's), newest first"),
        ("regrade", Cli.submissions_regrade, "grade one again, or --all-matching the filters"),
    ):
        sub = listing_commands.add_parser(name, parents=[common], help=text, description=text)
        sub.set_defaults(handler=handler)
        sub.add_argument("--problem", metavar="ID")
        sub.add_argument("--verdict", help="e.g. wrong_answer, time_limit_exceeded")
        sub.add_argument("--diagnosis", metavar="CODE", help="a diagnosis code, e.g. missing-wo")
        sub.add_argument("--since", metavar="TIME", help="created at or after (ISO 8601)")
        sub.add_argument("--until", metavar="TIME", help="created before (ISO 8601)")
        sub.add_argument("--user-id", type=int, metavar="N", help="the submitting account")
        sub.add_argument("--mode", choices=["submit", "examples"])
        sub.add_argument(
            "--course", type=int, metavar="N", help="a course's submissions (its staff)"
        )
        if name == "list":
            sub.add_argument("--limit", type=int, default=50, help="rows per page (1-200)")
            sub.add_argument("--cursor", help="the next page, as the previous one printed")
        else:
            sub.add_argument("submission", metavar="SUBMISSION_ID", nargs="?")
            sub.add_argument(
                "--all-matching", action="store_true", help="every match of the filters"
            )
            sub.add_argument("--yes", action="store_true", help="do not ask before --all-matching")

    cases = commands.add_parser(
        "cases", help="a problem's stored test cases: the catalog's, or --course N's (TJ_TOKEN)"
    )
    case_commands = cases.add_subparsers(dest="cases_command", required=True, metavar="COMMAND")
    for name, handler, text in (
        ("list", Cli.cases_list, "list the test cases (all with a token, else public ones)"),
        ("add", Cli.cases_add, "add a case from an .npz or a .json file"),
        ("remove", Cli.cases_remove, "remove a stored case by id or name"),
    ):
        sub = case_commands.add_parser(name, parents=[common], help=text, description=text)
        sub.set_defaults(handler=handler)
        sub.add_argument("problem", metavar="ID")
        sub.add_argument(
            "--course",
            type=int,
            metavar="N",
            help="a course's own cases (its staff; they grade only its assignments); without "
            "it, the catalog's (only administrators change them)",
        )
        if name == "add":
            sub.add_argument("file", metavar="FILE", help=".npz (one array per parameter) or .json")
            sub.add_argument("--name", help="default: the file's name without its extension")
            sub.add_argument("--visibility", choices=["hidden", "public"])
            sub.add_argument("--weight", type=float)
        if name == "remove":
            sub.add_argument("case", metavar="CASE", help="its id or its name")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for option, default in (("url", None), ("timeout", DEFAULT_TIMEOUT), ("json", False)):
        if not hasattr(args, option):
            setattr(args, option, default)
    try:
        cli = Cli(args)
    except JudgeError as exc:
        # A malformed --url / TJ_URL: nothing was sent.
        Console(stderr=True, highlight=False, markup=False, soft_wrap=True).print(f"tj: {exc}")
        return EXIT_USAGE
    try:
        code: int = args.handler(cli)
        return code
    except UsageError as exc:
        cli.err.print(f"tj: {exc}", markup=False)
        return EXIT_USAGE
    except JudgeError as exc:
        cli.err.print(f"tj: {exc}", markup=False)
        if exc.code == "identical_resubmission":
            cli.err.print("tj: `tj submit ... --force` spends an attempt anyway", markup=False)
        return EXIT_FAILED
    except KeyboardInterrupt:
        cli.err.print("tj: interrupted")
        return 130
    finally:
        cli.judge.close()


if __name__ == "__main__":
    sys.exit(main())
