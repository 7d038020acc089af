"""The docs stay true: the configuration page matches ``Settings``, every relative link in the
README and docs/ resolves, and the README stays a front page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import configdoc
from app.core.config import REPO_ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def test_configuration_page_is_generated_from_settings() -> None:
    assert configdoc.is_current(), "docs/configuration.md is stale: run `python -m app config-docs`"


def test_config_docs_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text(configdoc.render().replace("GRADER_WALL_SECONDS", "GRADER_WALL"))
    assert not configdoc.is_current(stale)
    configdoc.write(stale)
    assert configdoc.is_current(stale)


def test_config_docs_command_checks_the_committed_page() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "config-docs", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.name} links to missing files: {broken}"


def test_readme_is_a_front_page() -> None:
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160
    # The two set-up commands come first.
    commands = [line for line in lines if line.startswith("make ")]
    assert len(commands) >= 2
    assert commands[0].startswith("make run") and commands[1].startswith("make test")
