"""What the service tells people by mail, and the mail outbox's status for staff."""
