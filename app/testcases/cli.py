"""``python -m app cases add|list|remove PROBLEM ... [--course ID]``: the API's operations, same
service. Run on the server (it opens the database itself), so it acts as an administrator: on
the catalog's cases, or with ``--course`` on that course's own."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings, get_settings
from app.core.errors import first_error
from app.problems.cases import Inputs, InvalidCase, Result
from app.problems.loader import Problem, load_problems


def _open(args: argparse.Namespace) -> tuple[Settings, sessionmaker[Session], Problem]:
    from app.courses.models import Course
    from app.db.engine import make_engine, make_sessionmaker
    from app.db.migrate import upgrade

    settings = get_settings()
    problems = load_problems(settings.problems_dir, settings.extra_problem_dirs)
    if args.problem not in problems:
        raise SystemExit(f"error: no problem {args.problem!r}; known: {sorted(problems)}")
    engine = make_engine(settings)
    upgrade(engine)
    sessions = make_sessionmaker(engine)
    if args.course is not None:
        with sessions() as session:
            if session.get(Course, args.course) is None:
                raise SystemExit(f"error: no course {args.course}")
    return settings, sessions, problems[args.problem]


def _scope(args: argparse.Namespace) -> str:
    return "the catalog" if args.course is None else f"course {args.course}"


def _who() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry, e.g. in a container
        return "cli"


def _fail(field: str, message: str) -> int:
    print(f"error: {field}: {message}", file=sys.stderr)
    return 1


def _read_json_case(
    path: Path, problem: Problem, max_elements: int
) -> tuple[dict[str, Any], Inputs, Result | None]:
    """(case fields, inputs, expected) from a JSON file: a POST body, or just the inputs."""
    from app.testcases.validation import expected_from_json, inputs_from_json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidCase("file", f"is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidCase("file", "must hold a JSON object")
    if "inputs" in data:
        fields = dict(data)
        raw_inputs, raw_expected = fields.pop("inputs"), fields.pop("expected", None)
    else:
        fields, raw_inputs, raw_expected = {}, data, None
    if not isinstance(raw_inputs, dict):
        raise InvalidCase("inputs", "must be an object")
    inputs = inputs_from_json(problem, raw_inputs, max_elements)
    expected = None
    if raw_expected is not None:
        expected = expected_from_json(problem, raw_expected, max_elements)
    return fields, inputs, expected


def _read_npz_case(
    path: Path, problem: Problem, max_elements: int, max_bytes: int
) -> tuple[dict[str, Any], Inputs, Result | None]:
    from app.testcases.codec import read_upload
    from app.testcases.validation import inputs_from_npz

    arrays = read_upload(path.read_bytes(), max_elements, max_bytes)
    inputs, expected = inputs_from_npz(problem, arrays)
    return {}, inputs, expected


def _add(args: argparse.Namespace) -> int:
    from app.testcases.schemas import CaseFields
    from app.testcases.service import CaseConflict, CaseMeta, CaseService

    settings, sessions, problem = _open(args)
    path = Path(args.file)
    if not path.is_file():
        return _fail("file", f"{path} does not exist")
    try:
        if path.suffix == ".npz":
            fields, inputs, expected = _read_npz_case(
                path, problem, settings.case_max_elements, settings.case_max_upload_bytes
            )
        else:
            fields, inputs, expected = _read_json_case(path, problem, settings.case_max_elements)
        for key in ("name", "visibility", "weight", "raises"):
            if getattr(args, key) is not None:
                fields[key] = getattr(args, key)
        try:
            meta = CaseFields.model_validate(fields)
        except ValidationError as exc:
            field, message = first_error(exc)
            return _fail(field or "case", message)
        service = CaseService(settings, sessions)
        row, version = service.add(
            problem,
            CaseMeta(meta.name, meta.visibility, meta.weight, meta.raises),
            inputs,
            expected,
            created_by=_who(),
            course_id=args.course,
        )
    except (InvalidCase, CaseConflict) as exc:
        return _fail(exc.field, exc.message)
    print(
        f"Added case {row.id} ({row.name}, {row.visibility}, weight {row.weight:g}) "
        f"to {_scope(args)}."
    )
    print(f"Test-set version of {problem.id}: {version}")
    for warning in json.loads(row.warnings):
        print(f"warning: {warning['code']}: {warning['message']}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from app.testcases.codec import from_npz
    from app.testcases.service import CaseService

    settings, sessions, problem = _open(args)
    version, rows = CaseService(settings, sessions).live(problem, args.course)
    print(f"{problem.id} ({_scope(args)}): test-set version {version}")
    print(f"{'id':>5}  {'source':<8}  {'visibility':<10}  {'weight':>6}  {'name':<24}  shapes")
    # A course's listing is its own cases; its submissions also run the folder's and catalog's.
    for case in problem.examples + problem.hidden if args.course is None else ():
        print(
            f"{'-':>5}  {'builtin':<8}  {case.visibility:<10}  {case.weight:>6g}  "
            f"{case.name:<24}  {_shapes(case.inputs)}"
        )
    for row in rows:
        codes = [w["code"] for w in json.loads(row.warnings)]
        note = f"  warnings: {', '.join(codes)}" if codes else ""
        print(
            f"{row.id:>5}  {'stored':<8}  {row.visibility:<10}  {row.weight:>6g}  "
            f"{row.name:<24}  {_shapes(from_npz(row.inputs_npz))}{note}"
        )
    return 0


def _shapes(inputs: Inputs) -> str:
    return " ".join(
        f"{k}={'x'.join(map(str, v.shape))}" if isinstance(v, np.ndarray) else f"{k}={v}"
        for k, v in inputs.items()
    )


def _remove(args: argparse.Namespace) -> int:
    from app.testcases.service import CaseService

    settings, sessions, problem = _open(args)
    service = CaseService(settings, sessions)
    row = service.find(problem, args.case, args.course)
    version = None if row is None else service.remove(problem, row.id, args.course)
    if row is None or version is None:
        return _fail("case", f"no stored case {args.case!r} of {problem.id} in {_scope(args)}")
    print(f"Removed case {row.id} ({row.name}).")
    print(f"Test-set version of {problem.id}: {version}")
    return 0


def add_case_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cases = commands.add_parser(
        "cases", help="add, list and remove stored test cases (the catalog's or a course's)"
    )
    sub = cases.add_subparsers(dest="cases_command", required=True)
    add = sub.add_parser("add", help="validate a case (.npz or .json) and store it")
    add.add_argument("problem", help="problem id")
    add.add_argument(
        "file",
        help=".npz (one array per parameter, optional 'expected' or 'expected.<output>') or "
        ".json (POST body)",
    )
    add.add_argument("--name", default=None, help="required unless the JSON file has one")
    add.add_argument("--visibility", choices=("hidden", "public"), default=None)
    add.add_argument("--weight", type=float, default=None)
    add.add_argument(
        "--raises", default=None, help="the exception type the function must raise (ValueError)"
    )
    add.set_defaults(handler=_add)
    listing = sub.add_parser("list", help="list the current test set")
    listing.add_argument("problem")
    listing.set_defaults(handler=_list)
    remove = sub.add_parser("remove", help="remove a stored case by id or name")
    remove.add_argument("problem")
    remove.add_argument("case", help="the id or the name from `cases list`")
    remove.set_defaults(handler=_remove)
    for command in (add, listing, remove):
        command.add_argument(
            "--course",
            type=int,
            default=None,
            metavar="ID",
            help="a course's own cases (they grade only its assignments); without it, the "
            "catalog's (they grade every submission of the problem)",
        )
