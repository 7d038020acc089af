"""Mail: the outbox every mail goes through, its SMTP transport and its sender."""
