"""Sandbox backends: ``bwrap``, ``docker`` and ``process``, all speaking the runner's protocol.

``common`` holds what they share (launch, collect, interpret); ``make_sandbox`` in
``sandbox.factory`` picks one from settings.
"""
