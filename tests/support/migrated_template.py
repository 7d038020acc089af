"""A migrated SQLite database made once per test process and copied for every new one.

The suite starts hundreds of apps, each on a fresh SQLite file: each start ran every Alembic
migration (~0.5 s, more on a loaded machine). The first new database of a process is migrated
for real into a template; later ones start as a byte copy of it, and the real ``upgrade`` then
finds them at head. Migrations themselves are tested from their own starting revisions
(tests/*/test_*migration*.py), which call ``app.db.migrate`` directly and never come here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

_template: Path | None = None


def _template_file(real_upgrade: Callable[[Engine], None]) -> Path:
    global _template
    if _template is None:
        path = Path(tempfile.mkdtemp(prefix="tj-migrated-")) / "template.sqlite3"
        engine = create_engine(f"sqlite:///{path}")
        try:
            real_upgrade(engine)
        finally:
            engine.dispose()  # the last connection's close folds the WAL into the file
        _template = path
    return _template


def from_template(real_upgrade: Callable[[Engine], None]) -> Callable[[Engine], None]:
    """``upgrade`` that starts a SQLite file database that does not exist yet from the template."""

    def upgrade(engine: Engine) -> None:
        database = engine.url.database
        if engine.dialect.name == "sqlite" and database and database != ":memory:":
            path = Path(database)
            if not path.exists():
                template = _template_file(real_upgrade)
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(template, path)
        real_upgrade(engine)

    return upgrade
