"""Grading workers: the embedded in-process pool and the Celery scale-out workers."""
