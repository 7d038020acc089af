"""Runs untrusted submissions in isolation and returns raw outputs. It never judges correctness:
expected outputs never enter this package's processes."""
