# Kept in step with client/pyproject.toml (a test compares them).
__version__ = "0.1.0"
