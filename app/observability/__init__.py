"""What an operator reads of a running service: the metrics scrape, readiness, the metrics port."""
