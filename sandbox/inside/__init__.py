"""What runs INSIDE the sandbox: the runner (``runner``: ``supervisor`` and ``worker``) and the fork
server's ``zygote``.

Every backend puts this folder, read-only, at the same place (``sandbox.backends.runtime``:
``INSIDE_DIR``; the docker image has it there too) and starts it with that place's
``__main__.py`` and the sandbox's own interpreter. So only the standard library, numpy and this
package may be imported here: no pydantic, no ``app``, nothing else of ``sandbox``. Modules refer
to each other relatively, so the host may import the shared formats and names (``framing``,
``errors``) as ``sandbox.inside``; nothing here imports numpy when it is imported.
"""
