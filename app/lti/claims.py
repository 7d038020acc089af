"""The LTI 1.3 and Advantage claim names, message types, roles, scopes and media types."""

from __future__ import annotations

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = LTI + "message_type"
VERSION = LTI + "version"
DEPLOYMENT_ID = LTI + "deployment_id"
TARGET_LINK_URI = LTI + "target_link_uri"
RESOURCE_LINK = LTI + "resource_link"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
CUSTOM = LTI + "custom"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DL_CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
DL_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

LTI_VERSION = "1.3.0"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
DEEP_LINKING_RESPONSE = "LtiDeepLinkingResponse"

SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_MEMBERSHIPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"

LINEITEM_MEDIA = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_MEDIA = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_MEDIA = "application/vnd.ims.lis.v1.score+json"
MEMBERSHIPS_MEDIA = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
STAFF_ROLES = ("instructor", "ta")


def course_role(roles: object) -> str | None:
    """The TensorJudge course role of a launch's or a roster's LTI roles: instructor (an
    Instructor, Administrator or ContentDeveloper of the context), ta (a TeachingAssistant
    sub-role), student (a Learner), or None (no context role: refused). A TA sub-role wins over
    its principal Instructor role, which the spec's best practice has platforms send with it
    (``Instructor#TeachingAssistant`` and ``Instructor``): a TA must not become an instructor."""
    if not isinstance(roles, list):
        return None
    found = set()
    for role in roles:
        if not isinstance(role, str):
            continue
        # Context roles are full URIs; NRPS and older platforms may send the short names.
        short = role.removeprefix(MEMBERSHIP).lstrip("#/")
        if short.endswith("#TeachingAssistant") or short == "TeachingAssistant":
            found.add("ta")
        elif short in ("Instructor", "Administrator", "ContentDeveloper"):
            found.add("instructor")
        elif short in ("Learner", "Learner#Learner"):
            found.add("student")
    for role in ("ta", "instructor", "student"):
        if role in found:
            return role
    return None
