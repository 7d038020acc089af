"""TensorJudge: a grader for machine-learning coding problems."""
