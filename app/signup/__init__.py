"""Getting people in without an instructor's click: joining by code when one has no account,
and self sign-up on the configured email domains, both through a verified address."""
