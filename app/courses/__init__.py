"""Courses and their rosters: who is a student, TA or instructor where."""
