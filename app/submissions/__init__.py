"""Submissions: the API that accepts code, the rows that remember it, and the grading results."""
