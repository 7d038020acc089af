"""torch for the docker sandbox image, pruned as the runtime tree prunes it.

    python -m sandbox.backends.imagetorch DEST

copies into ``DEST/`` the host's torch as a run may have it (``runtree.torch_sources``: no C++
headers, test suites, executables or inductor) and the companions ``import torch`` needs, with
their modes and mtimes (the bytecode caches stay valid), and puts an empty, non-executable
``torch/bin/torch_shm_manager`` in place of the shared-memory manager, as the tree does.
``.ci/docker-setup.sh`` lays it in the image's build context; ``sandbox/Dockerfile`` installs it
when it loads with the image's Python. Exits 3, copying nothing, where torch is not installed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sandbox.backends.runtime import find_torch
from sandbox.backends.runtree import torch_sources

SHM_MANAGER = "torch/bin/torch_shm_manager"


def copy_torch(dest: Path) -> bool:
    torch_dir = find_torch()
    if torch_dir is None:
        return False
    for rel, src in torch_sources(torch_dir, ""):
        target = dest / rel.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    manager = dest / SHM_MANAGER
    manager.parent.mkdir(parents=True, exist_ok=True)
    manager.write_bytes(b"")
    manager.chmod(0o444)
    return True


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sandbox.backends.imagetorch DEST", file=sys.stderr)
        return 2
    return 0 if copy_torch(Path(argv[0])) else 3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
