"""Similarity reports: for staff, pairs of students' submissions to one assignment problem
ranked by evidence that they were not written independently (shared code after names,
comments and the starter are factored out; the same rare diagnoses or failures)."""
