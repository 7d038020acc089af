"""Instructor reports: how well a test set diagnoses, and how students are doing."""
