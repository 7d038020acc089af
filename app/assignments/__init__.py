"""Assignments: problems with points, dates, late credit, attempt and feedback policies, and the
per-student or per-section overrides of them."""
