"""Who may read a practice submission (its code, report and events).

Anonymous practice rows (no account) are readable by anyone holding their id, as before
accounts existed: the id is a random UUID the submitter was given. A row with an account is
readable by that account and by administrators. Work in an assignment is decided by the
course's rules instead (``SubmissionService.present`` and its registered view).
"""

from __future__ import annotations

from app.auth.tokens import Principal
from app.submissions.models import Submission


def may_read(principal: Principal | None, submission: Submission) -> bool:
    if submission.user_id is None:
        return True
    if principal is None:
        return False
    return principal.user_id == submission.user_id or principal.is_admin
