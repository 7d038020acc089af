"""LTI 1.3 Advantage: an LMS (Canvas, Moodle, Blackboard...) launches TensorJudge, deep-links
its assignments and problems, gets grades back (AGS) and gives its roster (NRPS)."""
