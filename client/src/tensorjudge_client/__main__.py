"""``python -m tensorjudge_client`` is ``tj``."""

import sys

from tensorjudge_client.cli import main

sys.exit(main())
