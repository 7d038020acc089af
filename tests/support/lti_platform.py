"""A mock LTI 1.3 Advantage platform (an LMS) on 127.0.0.1 for the LTI tests, offline.

It has its own RSA key and serves its key set; an OIDC auth endpoint that answers the tool's
login redirect with a signed id_token (a form posted back to the tool, as a browser does it); a
token endpoint that checks the tool's signed client assertion against the tool's key set; line
item, score and membership endpoints that record what they get; a deep-linking return that
checks the tool's signed answer and makes the line item it asks for; and a course page whose
links start launches. ``down`` makes its services answer 503 (an outage)."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape, unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
CLIENT_ID = "tensorjudge-client"
# Another tool registered on the same LMS: a token issued to it must not launch TensorJudge.
OTHER_CLIENT = "another-tool-client"
DEPLOYMENT = "deployment-1"
CONTEXT = "course-101"
SCORE_MEDIA = "application/vnd.ims.lis.v1.score+json"


def new_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


@dataclass
class Person:
    sub: str
    name: str
    email: str
    roles: list[str]


@dataclass
class Link:
    id: str
    title: str
    custom: dict[str, str] = field(default_factory=dict)
    lineitem: str | None = None


@dataclass
class Received:
    method: str
    path: str
    content_type: str
    body: Any
    authorization: str


class MockPlatform:
    def __init__(self) -> None:
        self.key = new_key("platform-key-1")
        self.people: dict[str, Person] = {}
        self.links: dict[str, Link] = {}
        self.line_items: dict[str, dict[str, Any]] = {}
        self.scores: list[Received] = []
        self.received: list[Received] = []
        self.tokens: set[str] = set()
        self.deep_link_answers: list[dict[str, Any]] = []
        self.down = False
        self.tool_jwks: Callable[[], dict[str, Any]] = lambda: {"keys": []}
        self.tool_login = ""
        # Tests change what the next id_token says or which key signs it.
        self.tamper: Callable[[dict[str, Any]], None] | None = None
        self.sign_with: RSAKey | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> MockPlatform:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(10)
        self._server.server_close()

    @property
    def registration(self) -> dict[str, Any]:
        """The body of POST /api/lti/platforms for this platform."""
        return {
            "name": "Mock LMS",
            "issuer": self.url,
            "client_id": CLIENT_ID,
            "deployment_ids": [DEPLOYMENT],
            "auth_login_url": f"{self.url}/auth",
            "auth_token_url": f"{self.url}/token",
            "keyset_url": f"{self.url}/jwks",
        }

    def register_at(self, url: str, admin_token: str) -> None:
        """Registers this platform with the tool served at ``url`` (an admin's token), as an
        administrator would, and gives the LMS course Ines, Sam and Carol."""
        self.tool_login = f"{url}/lti/login"
        self.tool_jwks = lambda: httpx.get(f"{url}/lti/jwks").json()
        registered = httpx.post(
            f"{url}/api/lti/platforms",
            json=self.registration,
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        assert registered.status_code == 201, registered.text
        self.add_person("ines", "Ines Instructor", [INSTRUCTOR])
        self.add_person("sam", "Sam Student", [LEARNER])
        self.add_person("carol", "Carol Neverlaunched", [LEARNER])

    def add_person(self, hint: str, name: str, roles: list[str]) -> Person:
        person = Person(sub=f"sub-{hint}", name=name, email=f"{hint}@lms.example.edu", roles=roles)
        self.people[hint] = person
        return person

    # -- launches -----------------------------------------------------------------------------
    def login_params(self, hint: str, message: str) -> dict[str, str]:
        """What the LMS sends to the tool's login initiation URL; ``message`` is a link id or
        "deep-link"."""
        return {
            "iss": self.url,
            "login_hint": hint,
            "target_link_uri": self.tool_login.replace("/login", "/launch"),
            "lti_message_hint": message,
            "client_id": CLIENT_ID,
            "lti_deployment_id": DEPLOYMENT,
        }

    def claims_for(self, hint: str, message: str, nonce: str) -> dict[str, Any]:
        person = self.people[hint]
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "azp": CLIENT_ID,
            "sub": person.sub,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "name": person.name,
            "email": person.email,
            LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT,
            LTI + "roles": person.roles,
            LTI + "context": {"id": CONTEXT, "label": "ML101", "title": "Machine Learning 101"},
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": f"{self.url}/memberships",
                "service_versions": ["2.0"],
            },
        }
        ags: dict[str, Any] = {
            "scope": [
                "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            ],
            "lineitems": f"{self.url}/lineitems",
        }
        if message == "deep-link":
            claims[LTI + "message_type"] = "LtiDeepLinkingRequest"
            claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": f"{self.url}/deep-link-return",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "data": "opaque-platform-data",
            }
        else:
            link = self.links[message]
            claims[LTI + "message_type"] = "LtiResourceLinkRequest"
            claims[LTI + "resource_link"] = {"id": link.id, "title": link.title}
            claims[LTI + "target_link_uri"] = self.tool_login.replace("/login", "/launch")
            claims[LTI + "custom"] = dict(link.custom)
            if link.lineitem:
                ags["lineitem"] = link.lineitem
        claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = ags
        return claims

    def sign(self, claims: dict[str, Any]) -> str:
        key = self.sign_with or self.key
        return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "JWT"}, claims, key)

    def authorize(self, query: dict[str, str]) -> tuple[int, str, dict[str, str]]:
        """The auth endpoint: (status, redirect_uri, the form fields it posts back)."""
        for name, value in (
            ("scope", "openid"),
            ("response_type", "id_token"),
            ("response_mode", "form_post"),
            ("prompt", "none"),
            ("client_id", CLIENT_ID),
        ):
            if query.get(name) != value:
                return 400, "", {"error": f"bad {name}"}
        if query.get("login_hint") not in self.people or not query.get("nonce"):
            return 400, "", {"error": "bad login_hint or nonce"}
        claims = self.claims_for(
            query["login_hint"], query.get("lti_message_hint", ""), query["nonce"]
        )
        if self.tamper is not None:
            self.tamper(claims)
        fields = {"id_token": self.sign(claims), "state": query.get("state", "")}
        return 200, query["redirect_uri"], fields

    # -- services -----------------------------------------------------------------------------
    def tool_keys(self) -> KeySet:
        return KeySet.import_key_set(self.tool_jwks())

    def issue_token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        if form.get("client_assertion_type") != (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ):
            return 400, {"error": "invalid_client"}
        try:
            token = jwt.decode(form.get("client_assertion", ""), self.tool_keys())
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": CLIENT_ID},
                sub={"essential": True, "value": CLIENT_ID},
                aud={"essential": True, "value": f"{self.url}/token"},
                exp={"essential": True},
                jti={"essential": True},
            ).validate(token.claims)
        except Exception as exc:  # any failure is the client's
            return 401, {"error": "invalid_client", "error_description": str(exc)}
        access = secrets.token_urlsafe(16)
        with self._lock:
            self.tokens.add(access)
        return 200, {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": form.get("scope", ""),
        }

    def make_line_item(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            number = len(self.line_items) + 1
            url = f"{self.url}/lineitems/{number}"
            item = {"id": url, **body}
            self.line_items[url] = item
            return item

    def accept_deep_link(self, form: dict[str, str]) -> tuple[int, str]:
        try:
            token = jwt.decode(form.get("JWT", ""), self.tool_keys())
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": CLIENT_ID},
                aud={"essential": True, "value": self.url},
                exp={"essential": True},
                nonce={"essential": True},
            ).validate(token.claims)
        except Exception as exc:
            return 400, f"bad deep-linking response: {exc}"
        claims = dict(token.claims)
        if claims.get(LTI + "message_type") != "LtiDeepLinkingResponse":
            return 400, "not a deep-linking response"
        self.deep_link_answers.append(claims)
        for item in claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/content_items", []):
            link = Link(id=f"link-{len(self.links) + 1}", title=item["title"])
            link.custom = dict(item.get("custom", {}))
            if "lineItem" in item:
                made = self.make_line_item({**item["lineItem"], "resourceLinkId": link.id})
                link.lineitem = made["id"]
            self.links[link.id] = link
        return 200, "<h1>Added</h1>"

    def members(self) -> dict[str, Any]:
        return {
            "id": f"{self.url}/memberships",
            "context": {"id": CONTEXT, "label": "ML101", "title": "Machine Learning 101"},
            "members": [
                {
                    "status": "Active",
                    "name": p.name,
                    "email": p.email,
                    "user_id": p.sub,
                    "roles": p.roles,
                }
                for p in self.people.values()
            ],
        }

    def scores_for(self, sub: str) -> list[dict[str, Any]]:
        return [r.body for r in self.scores if r.body.get("userId") == sub]

    def course_page(self, hint: str) -> str:
        """The LMS course page as ``hint`` sees it: each link posts a login initiation."""
        forms = []
        for message, title in [
            *((link.id, link.title) for link in self.links.values()),
            ("deep-link", "Add TensorJudge content"),
        ]:
            inputs = "".join(
                f'<input type="hidden" name="{k}" value="{escape(v)}">'
                for k, v in self.login_params(hint, message).items()
            )
            forms.append(
                f'<form method="post" action="{escape(self.tool_login)}">{inputs}'
                f'<button type="submit">{escape(title)}</button></form>'
            )
        return "<!doctype html><title>LMS</title><h1>Machine Learning 101</h1>" + "".join(forms)


def form_fields(html: str) -> tuple[str, dict[str, str]]:
    """The action and hidden fields of the first form of an auto-posting page."""
    action = re.search(r'<form[^>]*action="([^"]*)"', html)
    assert action is not None, html
    fields = {
        unescape(m.group(1)): unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]*)" value="([^"]*)"', html)
    }
    return unescape(action.group(1)), fields


def _handler(platform: MockPlatform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes | str, media: str, **headers: str) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, value: Any, media: str = "application/json") -> None:
            self._send(status, json.dumps(value), media)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _authorized(self) -> bool:
            auth = self.headers.get("Authorization", "")
            return auth.startswith("Bearer ") and auth[7:] in platform.tokens

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            if parts.path == "/jwks":
                self._json(200, {"keys": [platform.key.as_dict(private=False)]})
            elif parts.path == "/auth":
                status, redirect, fields = platform.authorize(query)
                if status != 200:
                    self._json(status, fields)
                    return
                inputs = "".join(
                    f'<input type="hidden" name="{k}" value="{escape(v)}">'
                    for k, v in fields.items()
                )
                self._send(
                    200,
                    f'<!doctype html><form method="post" action="{escape(redirect)}">{inputs}'
                    "</form><script>document.forms[0].submit()</script>",
                    "text/html",
                )
            elif parts.path == "/course":
                self._send(200, platform.course_page(query.get("as", "")), "text/html")
            elif platform.down:
                self._json(503, {"error": "down"})
            elif not self._authorized():
                self._json(401, {"error": "no token"})
            elif parts.path == "/lineitems":
                items = list(platform.line_items.values())
                if "resource_id" in query:
                    items = [i for i in items if i.get("resourceId") == query["resource_id"]]
                self._json(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json")
            elif parts.path == "/memberships":
                self._json(
                    200,
                    platform.members(),
                    "application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
                )
            else:
                self._json(404, {"error": "unknown"})

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            raw = self._body()
            media = self.headers.get("Content-Type", "")
            if parts.path == "/deep-link-return":
                status, page = platform.accept_deep_link(dict(parse_qsl(raw.decode())))
                self._send(status, page, "text/html")
                return
            if platform.down:
                self._json(503, {"error": "down"})
                return
            if parts.path == "/token":
                status, body = platform.issue_token(dict(parse_qsl(raw.decode())))
                self._json(status, body)
                return
            if not self._authorized():
                self._json(401, {"error": "no token"})
                return
            body = json.loads(raw or b"null")
            got = Received("POST", parts.path, media, body, self.headers["Authorization"])
            platform.received.append(got)
            if parts.path == "/lineitems":
                self._json(
                    201, platform.make_line_item(body), "application/vnd.ims.lis.v2.lineitem+json"
                )
            elif re.fullmatch(r"/lineitems/\d+/scores", parts.path):
                if f"{platform.url}{parts.path[: -len('/scores')]}" not in platform.line_items:
                    self._json(404, {"error": "no such line item"})
                    return
                platform.scores.append(got)
                self._send(204, b"", "text/plain")
            else:
                self._json(404, {"error": "unknown"})

    return Handler
