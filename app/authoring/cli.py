"""``python -m app problems new ID [--dir D]`` and ``python -m app problems check [ID|PATH]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from app.core.config import Settings, get_settings


def _roots(settings: Settings) -> list[Path]:
    return [settings.problems_dir, *settings.extra_problem_dirs]


def _targets(settings: Settings, target: str | None) -> list[Path] | str:
    """The folders to check, or why there are none."""
    from app.problems.loader import problem_folders

    if target is None:
        return [d for root in _roots(settings) if root.is_dir() for d in problem_folders(root)]
    path = Path(target)
    if path.is_dir():
        return [path] if (path / "problem.toml").is_file() else problem_folders(path)
    for root in _roots(settings):
        if (root / target).is_dir():
            return [root / target]
    return (
        f"no problem folder {target!r} in {', '.join(str(r) for r in _roots(settings))}: give "
        f"the folder's path, or add its parent to GRADER_PROBLEM_DIRS"
    )


def _check(args: argparse.Namespace) -> int:
    from app.authoring.check import check_folder
    from app.problems.loader import ProblemLoadError, load_problems
    from sandbox.factory import make_sandbox

    settings = get_settings()
    targets = _targets(settings, args.target)
    if isinstance(targets, str):
        print(f"error: {targets}", file=sys.stderr)
        return 2
    sandbox = None if args.no_sandbox else make_sandbox(settings)
    failed = 0
    for directory in targets:
        print(f"== {directory}")
        result = check_folder(directory, sandbox)
        failed += not result.ok
        print(f"== {directory.name}: {'OK' if result.ok else f'{len(result.defects)} defect(s)'}")
    if args.target is None:
        try:  # ids must be unique across the folders, as at start-up
            load_problems(settings.problems_dir, settings.extra_problem_dirs)
        except ProblemLoadError as exc:
            print(f"DEFECT {exc}")
            failed += 1
    return 1 if failed else 0


def _new(args: argparse.Namespace) -> int:
    from pydantic import TypeAdapter, ValidationError

    from app.authoring.skeleton import write_skeleton
    from app.problems.spec import Slug

    try:
        TypeAdapter(Slug).validate_python(args.id)
    except ValidationError:
        print(
            f"error: id {args.id!r}: lowercase words joined by '-' (e.g. my-problem)",
            file=sys.stderr,
        )
        return 2
    directory = Path(args.dir) if args.dir else get_settings().problems_dir
    try:
        target = write_skeleton(args.id, directory)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Wrote {target}. Edit it, then run: python -m app problems check {target}")
    return 0


def add_problem_commands(commands: Any) -> None:
    problems = commands.add_parser("problems", help="write and check problem folders")
    sub = problems.add_subparsers(dest="problems_command", required=True)
    new = sub.add_parser("new", help="write a working skeleton problem to start from")
    new.add_argument("id", help="the problem id, also its folder's name (e.g. softmax-backward)")
    new.add_argument(
        "--dir", default=None, help="where to create it (default: GRADER_PROBLEMS_DIR)"
    )
    new.set_defaults(handler=_new)
    check = sub.add_parser(
        "check", help="load, run, diagnose and grade a problem folder; exit 1 on any defect"
    )
    check.add_argument(
        "target",
        nargs="?",
        default=None,
        help="a problem id, a problem folder, or a folder of problems (default: every problem)",
    )
    check.add_argument(
        "--no-sandbox", action="store_true", help="skip grading the models in the sandbox"
    )
    check.set_defaults(handler=_check)
