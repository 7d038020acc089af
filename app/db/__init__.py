"""Database access: engine and sessions from Settings, the declarative base, and migrations."""
