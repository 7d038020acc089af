"""The entry point every backend runs: ``python -I -S -B .../__main__.py [zygote] ARGS``.

``-I`` keeps this file's folder off ``sys.path``, so the package is imported by its folder's name
from the folder above, which leaves ``sys.path`` again right after (its modules are found through
the package from then on), then ``runner.main`` or, with ``zygote``, the fork server's
``zygote.main`` runs.
"""

import os
import sys

if __name__ == "__main__":
    parent, package = os.path.split(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, parent)
    try:
        __import__(package)
    finally:
        sys.path.remove(parent)
    args = sys.argv[1:]
    if args[:1] == ["zygote"]:
        sys.exit(__import__(f"{package}.zygote", fromlist=["main"]).main(args[1:]))
    sys.exit(__import__(f"{package}.runner", fromlist=["main"]).main(args))
