"""Command line: ``python -m app serve`` (later issues add ``worker``, ``tokens``, ``cases``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from app.core.config import get_settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    settings = get_settings()
    uvicorn.run(
        "app.main:app",
        host=args.host or settings.host,
        port=args.port or settings.port,
        log_level="info",
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="TensorJudge grader")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the API and web page")
    serve.add_argument("--host", default=None, help="default: GRADER_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: GRADER_PORT or 8000")
    serve.set_defaults(handler=_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
