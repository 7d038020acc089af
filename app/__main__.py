"""Command line: ``python -m app serve|worker|tokens|users|cases|problems|lti|config-docs``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from app.auth.cli import add_token_commands
from app.auth.users_cli import add_user_commands
from app.authoring.cli import add_problem_commands
from app.core.config import get_settings
from app.lti.cli import add_lti_commands
from app.testcases.cli import add_case_commands


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.problems.loader import ProblemLoadError

    settings = get_settings()
    try:
        from app.main import app
    except ProblemLoadError as exc:
        # Names each folder and its defects; a traceback would bury them.
        print(f"error: {exc}", file=sys.stderr)
        return 1
    uvicorn.run(
        app,
        host=args.host or settings.host,
        port=args.port or settings.port,
        log_level="info",
        # uvicorn's own handling would believe X-Forwarded-For from 127.0.0.1 (its default) and
        # replace the peer's address with it; the app believes forwarded headers from
        # GRADER_TRUSTED_PROXIES only, and needs the peer's address to tell (app.core.proxies).
        proxy_headers=False,
    )
    return 0


def _worker(args: argparse.Namespace) -> int:
    """A scale-out grading worker: consumes jobs from Redis (Celery), grades in the sandbox."""
    from app.authoring.check import startup_defects
    from app.core import events, metrics
    from app.lifespan import after_grading
    from app.observability.port import MetricsPort
    from app.observability.readiness import Priming, Readiness
    from app.problems.loader import frameworks_off, load_problems
    from app.worker.celery_app import run_worker
    from app.worker.runtime import grading_context, open_database

    settings = get_settings()
    metrics.configure(settings.metrics_dir)
    events.configure(settings.log_format)
    engine, sessions = open_database(settings)
    # Vetted as the server's start-up does: a worker never grades a folder the API refuses.
    problems = load_problems(
        settings.problems_dir,
        settings.extra_problem_dirs,
        vet=startup_defects,
        frameworks_off=frameworks_off(settings),
    )
    ctx = grading_context(settings, sessions, problems, after_grading(settings))
    readiness = Readiness(engine, redis_url=settings.redis_url)
    if settings.sandbox_prime:
        # As the API's embedded workers do: the first job does not wait for the fork server.
        readiness.priming = Priming()
        readiness.priming.run(ctx.prime)
    if settings.metrics_port is not None:
        MetricsPort(settings.host, settings.metrics_port, readiness).start()  # ends with us
    run_worker(ctx, args.concurrency or settings.workers)
    return 0


def _config_docs(args: argparse.Namespace) -> int:
    from app.core import configdoc

    if args.check:
        if configdoc.is_current():
            return 0
        print(f"{configdoc.DOC_PATH} is stale: run `python -m app config-docs`", file=sys.stderr)
        return 1
    configdoc.write()
    print(f"wrote {configdoc.DOC_PATH}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="TensorJudge grader")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the API and web page")
    serve.add_argument("--host", default=None, help="default: GRADER_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: GRADER_PORT or 8000")
    serve.set_defaults(handler=_serve)
    worker = commands.add_parser(
        "worker", help="grade submissions from the Redis queue (GRADER_QUEUE=celery)"
    )
    worker.add_argument(
        "--concurrency", type=int, default=None, help="default: GRADER_WORKERS (cores)"
    )
    worker.set_defaults(handler=_worker)
    docs = commands.add_parser(
        "config-docs", help="write docs/configuration.md from the settings class"
    )
    docs.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    docs.set_defaults(handler=_config_docs)
    add_token_commands(commands)
    add_user_commands(commands)
    add_case_commands(commands)
    add_problem_commands(commands)
    add_lti_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
