"""API tokens for instructors and admins: stored hashed, checked by a typed dependency."""
