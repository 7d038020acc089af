"""Instructor test cases: validated, stored in the database, versioned per problem."""
