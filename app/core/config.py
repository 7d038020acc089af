"""The one place configuration is read from: environment variables prefixed ``GRADER_``."""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]

SandboxKind = Literal["bwrap", "docker", "process"]
QueueKind = Literal["embedded", "celery"]
EnvKind = Literal["development", "production"]
# Placeholder passwords of .env.example and the usual defaults: refused when GRADER_ENV=production.
EXAMPLE_SECRETS = frozenset(
    {"change-me", "changeme", "password", "postgres", "redis", "secret", "tensorjudge", "example"}
)
MIN_SECRET_LENGTH = 12


class Settings(BaseSettings):
    """Every knob of the service. docs/configuration.md is generated from this class
    (``python -m app config-docs``), so every field carries a description."""

    model_config = SettingsConfigDict(env_prefix="GRADER_", extra="ignore")

    env: EnvKind = Field(
        default="development",
        description="'production' refuses example or short passwords in the database and Redis "
        "URLs (start-up fails with a message naming the variable).",
    )
    host: str = Field(default="127.0.0.1", description="Where `python -m app serve` listens.")
    port: int = Field(default=8000, ge=1, le=65535, description="The port it listens on.")

    data_dir: Path = Field(
        default=REPO_ROOT / "data",
        description="Where the SQLite database and other state live.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset means a SQLite file in data_dir.",
    )
    sqlite_synchronous: Literal["NORMAL", "FULL"] = Field(
        # FULL by default: an acknowledged submission must survive power loss too; NORMAL saves
        # about 1 ms per submission for deployments that accept that window.
        default="FULL",
        description="SQLite (WAL) only. FULL: fsync on every commit; NORMAL: commits survive a "
        "crash of the process but the last ones may roll back on power loss or an OS crash.",
    )
    problems_dir: Path = Field(
        default=REPO_ROOT / "problems",
        description="Problem folders, loaded and validated at start-up.",
    )
    client_wheel_dir: Path = Field(
        default=REPO_ROOT / "client" / "dist",
        description="Where `make client-wheel` puts the client's wheel, served at /client/.",
    )
    problem_dirs: str = Field(
        default="",
        description="Extra folders of problems, separated by ':' (a course's own problems); "
        "ids must be unique across every folder.",
    )

    anonymous_practice: bool = Field(
        default=True,
        description="Anyone may submit to the public problem list without an account; false "
        "requires signing in (courses work either way).",
    )
    session_hours: float = Field(
        default=24 * 14,
        gt=0,
        le=24 * 365,
        description="How long a sign-in on the page lasts, in hours.",
    )
    session_cookie_secure: bool | None = Field(
        default=None,
        description="Send the session cookie only over HTTPS; unset means true when "
        "GRADER_ENV=production (set true behind a TLS proxy in development too).",
    )
    password_min_length: int = Field(
        default=10, ge=8, le=128, description="Shortest password an account may set."
    )
    login_window_seconds: float = Field(
        default=15 * 60,
        gt=0,
        le=86400,
        description="Window over which failed sign-ins are counted for throttling, in seconds.",
    )
    login_max_failures_per_email: int = Field(
        default=5,
        ge=1,
        le=10_000,
        description="Failed sign-ins for one email within the window before sign-in to it "
        "answers 429 (even with the right password) until the window passes.",
    )
    login_max_failures_per_address: int = Field(
        default=20,
        ge=1,
        le=100_000,
        description="Failed sign-ins from one client address within the window before that "
        "address gets 429.",
    )
    password_hashing_slots: int = Field(
        default=2,
        ge=1,
        le=256,
        description="argon2 verifications and hashes (sign-in, token exchange, password change "
        "or reset) the server runs at once; each holds about 64 MiB and a core for ~0.1-0.5 s. "
        "The default suits 2 cores; more arrive wait in line (no thread held).",
    )
    password_hashing_wait_seconds: float = Field(
        default=5.0,
        gt=0,
        le=120,
        description="How long a sign-in or password change waits in line for an argon2 slot "
        "before it answers 503 busy with Retry-After (the attempt is then not counted).",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Addresses (IPs or CIDRs, comma-separated) of the reverse proxies whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed. Empty: no forwarded header is "
        "believed from anyone, 127.0.0.1 included; the client address is the connection's.",
        json_schema_extra={"doc_default": "empty"},
    )
    public_url: str | None = Field(
        default=None,
        description="The service's address as people reach it (e.g. https://judge.example.edu); "
        "used in mailed reset links and as the single sign-on redirect's base. Unset means the "
        "address of the request.",
    )
    proxy_request_start: bool = Field(
        default=False,
        description="Take a submission's arrival time from the trusted proxy's X-Request-Start "
        "header (t=<epoch seconds, ms or us>) when it is earlier than the request's own; only "
        "from GRADER_TRUSTED_PROXIES (docs/deadlines.md).",
    )
    initial_admin_email: str | None = Field(
        default=None,
        description="Unattended first run: when no administrator exists at start-up, this "
        "email becomes one (an existing account is promoted, never duplicated). Unset: the "
        "start-up prints a one-time setup link instead (docs/accounts.md).",
    )
    initial_admin_password: str | None = Field(
        default=None,
        description="The password of GRADER_INITIAL_ADMIN_EMAIL's new account; unset prints a "
        "one-use link to set it.",
    )
    initial_admin_name: str = Field(
        default="Administrator", description="The name of GRADER_INITIAL_ADMIN_EMAIL's account."
    )
    signup_domains: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Self sign-up at /signup: the email domains (comma-separated, e.g. "
        "'uni.example.edu,student.uni.example.edu') whose addresses may make an account, after "
        "verifying it by mail. Empty: self sign-up is off (joining by a course's code or link "
        "still makes an account for someone who has none).",
        json_schema_extra={"doc_default": "empty"},
    )
    signup_window_seconds: float = Field(
        default=3600,
        gt=0,
        le=7 * 86400,
        description="Window over which sign-up requests (self sign-up and joining without an "
        "account) are counted for their rate limits, in seconds.",
    )
    signup_max_per_email: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="Sign-up requests for one email within the window before it answers 429 "
        "(each mails that address once).",
    )
    signup_max_per_address: int = Field(
        default=20,
        ge=1,
        le=100_000,
        description="Sign-up requests from one client address within the window before that "
        "address gets 429.",
    )
    mailer: Literal["log", "smtp"] = Field(
        default="log",
        description="How the mail outbox sends: 'log' writes each mail to the server log (no "
        "mail server needed; the row is then marked sent); 'smtp' sends it through GRADER_SMTP_*.",
    )
    smtp_host: str = Field(default="127.0.0.1", description="SMTP server for mailer=smtp.")
    smtp_port: int = Field(default=25, ge=1, le=65535, description="Its port.")
    smtp_from: str = Field(
        default="tensorjudge@localhost", description="The From address of every mail."
    )
    smtp_user: str | None = Field(default=None, description="SMTP login; unset sends without.")
    smtp_password: str | None = Field(default=None, description="SMTP password.")
    smtp_starttls: bool = Field(
        default=False, description="Upgrade the SMTP connection with STARTTLS before login."
    )
    smtp_ca_file: str | None = Field(
        default=None,
        description="A PEM file of the certificate authorities STARTTLS trusts (e.g. a campus "
        "relay's own CA); unset trusts the system's.",
    )
    smtp_timeout_seconds: float = Field(
        default=15.0,
        gt=0,
        le=600,
        description="How long one SMTP step (connect, each command) may take; a server that "
        "hangs longer counts as down and the mail is tried again later.",
    )
    mail_send_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="How often the mail sender looks for mails to send in the outbox.",
    )
    mail_reminder_hours: float = Field(
        default=24.0,
        ge=0,
        le=24 * 14,
        description="How long before an assignment's due date its students with attempts left "
        "and nothing accepted get a reminder (once; an optional mail). 0 sends none.",
    )
    mail_reminder_interval_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="How often the reminder pass looks for assignments due within "
        "mail_reminder_hours.",
    )
    mail_retry_base_seconds: float = Field(
        default=30.0,
        gt=0,
        le=86_400,
        description="The first wait before trying a mail again when the SMTP server is down, "
        "hangs or answers 4xx; each retry waits twice as long, up to mail_retry_max_seconds.",
    )
    mail_retry_max_seconds: float = Field(
        default=900.0,
        gt=0,
        le=86_400,
        description="The longest wait between two tries of a mail.",
    )
    mail_give_up_hours: float = Field(
        default=72.0,
        gt=0,
        le=24 * 365,
        description="A mail the SMTP server has not taken after this long is marked failed "
        "(a 5xx refusal marks it failed at once); GET /api/admin/mail lists them.",
    )
    oidc_issuer: str | None = Field(
        default=None,
        description="Single sign-on: the OpenID Connect issuer URL (its "
        "/.well-known/openid-configuration is read); unset turns single sign-on off.",
    )
    oidc_client_id: str | None = Field(
        default=None, description="Single sign-on: this service's client id at the provider."
    )
    oidc_client_secret: str | None = Field(
        default=None, description="Single sign-on: the client secret the provider issued."
    )
    oidc_label: str = Field(
        default="single sign-on",
        description="The provider's name on the sign-in page's button ('Sign in with <label>').",
    )

    lti_send_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="LTI: how often the score sender looks for scores to send to the LMSs.",
    )
    lti_retry_base_seconds: float = Field(
        default=30.0,
        gt=0,
        le=86_400,
        description="LTI: the first wait before sending a score again after the LMS refused or "
        "did not answer; each retry waits twice as long, up to lti_retry_max_seconds.",
    )
    lti_retry_max_seconds: float = Field(
        default=900.0,
        gt=0,
        le=86_400,
        description="LTI: the longest wait between two tries of a score send.",
    )
    lti_give_up_hours: float = Field(
        default=72.0,
        gt=0,
        le=24 * 365,
        description="LTI: a score the LMS has not taken after this long is marked failed "
        "(listed by GET /api/lti/scores?status=failed).",
    )

    similarity_poll_seconds: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description="Similarity reports: how often the runner looks for reports to compute.",
    )
    similarity_lease_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="Similarity reports: how long a runner holds a report it computes; a "
        "report still running after this (its process stopped) is taken again.",
    )

    sandbox: SandboxKind = Field(
        default="bwrap",
        description="Sandbox backend: 'bwrap' (bubblewrap), 'docker', or 'process' (no "
        "isolation, development only).",
    )
    allow_unsafe_sandbox: bool = Field(
        default=False,
        description="Must be true to use the 'process' sandbox, which does not isolate.",
    )
    sandbox_python: Path | None = Field(
        default=None,
        description="Interpreter the bwrap/process sandbox runs; unset means the real path of "
        "this venv's base interpreter. Its numpy comes from the grader's own environment.",
    )
    sandbox_host_uid_base: int = Field(
        default=200_000,
        gt=0,
        le=2**32 - 2 - 65536,
        description="When the grader runs as root, each bwrap run gets its own unprivileged host "
        "uid base+1..65535 (the fork server's zygote: base), never root's; a non-root grader's "
        "runs keep its uid.",
    )
    sandbox_cgroup: bool = Field(
        default=True,
        description="Put each bwrap run in its own cgroup (memory and pids limits, a one-core CPU "
        "quota and the CPU time of all its processes) when the host allows it.",
    )
    sandbox_cgroup_parent: Path | None = Field(
        default=None,
        description="cgroup v2 only: a delegated, process-free cgroup directory (memory and pids "
        "enabled for children) to create each run's cgroup in; unset means the grader's own.",
    )
    sandbox_warm_pool: int = Field(
        default=2,
        ge=0,
        le=64,
        description="bwrap only: sandboxes launched ahead of demand (numpy imported, limits in "
        "force), each used for one submission then destroyed; 0 starts every run cold.",
    )
    sandbox_forkserver: bool = Field(
        default=True,
        description="bwrap only: fork each submission from a numpy-preloaded zygote in one "
        "long-lived sandbox, entering its own namespaces, cgroup, rlimits and seccomp filter "
        "before it reads its job (replaces the warm pool); false uses the warm pool.",
    )
    # One per grading worker of the default: while runs are in flight the fork server keeps
    # at most one spare per run in flight ready, so more than the workers would never be used.
    sandbox_forkserver_spares: int = Field(
        default=4,
        ge=0,
        le=16,
        description="Fork server only: runs forked ahead of demand, already in their own "
        "namespaces and cgroup but holding nothing of any submission; each serves one "
        "submission. 0 forks each run when its submission arrives.",
    )
    offer_torch: bool = Field(
        default=True,
        description="Offer PyTorch on the problems that list it, where torch is installed; false "
        "offers NumPy only, as where it is not installed (the problem page says PyTorch is not "
        "available on this server).",
    )
    sandbox_preload_torch: bool = Field(
        default=True,
        description="bwrap only, where torch is installed: PyTorch gradings start with torch "
        "already imported. The fork server's zygote imports it (its memory grows by ~200 MiB "
        "and each start by a few seconds); the warm pool, once a PyTorch grading has come, keeps "
        "sandboxes of its own for them (each ~180 MiB and ~1.2 CPU s to launch, against ~20 MiB "
        "for a NumPy one). false: PyTorch gradings run as cold sandboxes.",
    )
    sandbox_keep_resident_seconds: float = Field(
        default=60.0,
        ge=0.0,
        le=180.0,
        description="How often the memory every run shares (the runtime tree, the docker "
        "image's layers, the fork server's zygote) is read through again, so a host that "
        "reclaims idle guest memory never leaves a page that one run touched faster for the "
        "next; keep it well under that host's idle age (docs/sandbox-isolation.md). 0 turns it "
        "off.",
    )
    docker_image: str = Field(
        default="tensorjudge/sandbox:latest",
        description="Image the 'docker' sandbox runs, built from sandbox/Dockerfile.",
    )
    docker_url: str | None = Field(
        default=None,
        description="Docker engine for the 'docker' sandbox, e.g. unix:///var/run/docker.sock; "
        "unset means DOCKER_HOST or the default socket.",
    )

    # Deployment-wide ceilings; a problem may ask for less, never more.
    cpu_seconds: float = Field(
        default=5.0, gt=0, le=120, description="CPU time per run (a problem may ask for less)."
    )
    wall_seconds: float = Field(default=10.0, gt=0, le=300, description="Wall-clock time per run.")
    memory_mb: int = Field(default=512, ge=64, le=16384, description="Memory per run, in MiB.")
    max_processes: int = Field(
        default=64, ge=1, le=4096, description="Processes and threads per run."
    )
    output_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="stdout and stderr kept per run, each, in bytes.",
    )
    max_code_bytes: int = Field(
        default=64 * 1024,
        ge=256,
        le=1024 * 1024,
        description="Largest accepted submission in UTF-8 bytes (413 above).",
    )

    # Two per core: a grading alternates host work (holding the interpreter lock) and a run
    # in the sandbox (one process awake at a time, a wake-up between each call), so one
    # grading per core leaves a core idle whenever both wait; a second per core fills it.
    workers: int = Field(
        default_factory=lambda: 2 * (os.cpu_count() or 1),
        ge=1,
        le=256,
        description="Grading workers: threads in the server, or per `worker` process.",
        json_schema_extra={"doc_default": "twice the number of cores"},
    )

    # Submissions: queue, back-pressure and rate limits (app/submissions, app/worker).
    queue: QueueKind = Field(
        default="embedded",
        description="'embedded': in-process workers fed from the database; "
        "'celery': separate `python -m app worker` processes fed through Redis.",
    )
    redis_url: str = Field(default="redis://127.0.0.1:6379/0", description="Celery broker.")
    queue_max: int = Field(
        default=1000,
        ge=1,
        description="Queued+running submissions before POST answers 503 (practice and examples "
        "runs; a graded attempt an assignment admits is queued anyway).",
    )
    rate_limit: int = Field(
        default=30, ge=1, description="Submissions one client may create per rate window."
    )
    rate_window_seconds: float = Field(
        default=60.0, gt=0, le=86400, description="Length of the rate-limit window, in seconds."
    )
    regrade_matching_max: int = Field(
        default=200,
        ge=1,
        le=10000,
        description='Most submissions one "regrade all matching" may queue; more matching '
        "answers 422 (narrow the filters).",
    )
    lease_seconds: float = Field(
        default=60.0,
        ge=1,
        le=3600,
        description="A running submission whose worker stops renewing this lease is re-queued.",
    )
    visibility_timeout: float = Field(
        default=300.0,
        ge=1,
        description="Celery/Redis: seconds before an unacknowledged job is redelivered.",
    )
    sweep_seconds: float = Field(
        default=5.0, gt=0, le=600, description="How often stale queued/running rows are re-sent."
    )
    poll_seconds: float = Field(
        default=0.2,
        gt=0,
        le=10,
        description="How often idle embedded workers look for queued rows; ?wait and event "
        "streams are woken by notices and read the database every max(5 s, this) as a safety "
        "net.",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=20,
        description="Gradings started per submission before it is stored as internal_error "
        "(a grader failure or a worker dying mid-grade counts as an attempt).",
    )

    # Observability (app/core/metrics.py, app/core/events.py, app/observability).
    metrics_dir: Path | None = Field(
        default=None,
        description="prometheus-client's multiprocess directory: the API and the workers of one "
        "host that share it are summed in one scrape. Unset: each process counts alone. Give "
        "each host (container) its own; files of processes that are gone are removed when no "
        "process using it is left.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="Bearer token Prometheus sends to GET /metrics (admins may always scrape). "
        "Unset: admins only.",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Also serve the metrics, without credentials, on this port of GRADER_HOST "
        "(an internal network's scrape target; for `worker` processes, their only one).",
    )
    sandbox_prime: bool = Field(
        default=True,
        description="Build and start the sandbox backend when the server (embedded mode) or a "
        "`worker` process starts (in the background; GET /readyz, on a worker its metrics "
        "port's, waits for it) rather than on the first submission.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Submission state changes on stderr: 'json' (one object per line, for log "
        "pipelines) or 'text' (development).",
    )

    # Instructor test cases (app/testcases).
    case_max_elements: int = Field(
        default=1_000_000,
        ge=1,
        le=100_000_000,
        description="Largest number of elements in one array of an instructor's test case.",
    )
    case_max_upload_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1024,
        le=1024 * 1024 * 1024,
        description="Largest test-case request body (JSON or .npz upload), in bytes.",
    )

    # Course rosters (app/courses).
    roster_max_rows: int = Field(
        default=5000,
        ge=1,
        le=100_000,
        description="Most rows (besides the header) in one roster CSV upload.",
    )
    roster_max_bytes: int = Field(
        default=2 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="Largest roster CSV upload (the whole request body), in bytes.",
    )
    case_seed_secret: SecretStr | None = Field(
        default=None,
        description="Key of the keyed hash that derives each student's hidden-case seed in an "
        "assignment with per-student cases. Unset: a random key is generated and kept in "
        "data_dir/case-seed.key on first use; set it when graders on several hosts share a "
        "database, so a regrade anywhere reproduces the same cases.",
    )

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("signup_domains", mode="before")
    @classmethod
    def _domains_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            return [str(d).strip().lower().lstrip("@") for d in value if str(d).strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_networks(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR network") from None
        return value

    @model_validator(mode="after")
    def _unsafe_sandbox_needs_opt_in(self) -> Settings:
        if self.sandbox == "process" and not self.allow_unsafe_sandbox:
            raise ValueError(
                "GRADER_SANDBOX=process runs submissions without isolation; "
                "set GRADER_ALLOW_UNSAFE_SANDBOX=1 to accept that (development only)"
            )
        return self

    @model_validator(mode="after")
    def _no_example_secrets_in_production(self) -> Settings:
        if self.env != "production":
            return self
        for variable, url in (
            ("GRADER_DATABASE_URL", self.database_url),
            ("GRADER_REDIS_URL", self.redis_url),
        ):
            # A URL without a password is allowed: peer, certificate or socket authentication.
            password = urlsplit(url).password if url else None
            if password is None:
                continue
            if password.lower() in EXAMPLE_SECRETS or len(password) < MIN_SECRET_LENGTH:
                raise ValueError(
                    f"GRADER_ENV=production: the password in {variable} is an example default "
                    f"or shorter than {MIN_SECRET_LENGTH} characters; set a random one "
                    "(e.g. `openssl rand -hex 24`)"
                )
        seed_key = self.case_seed_secret.get_secret_value() if self.case_seed_secret else None
        if seed_key is not None and (
            seed_key.lower() in EXAMPLE_SECRETS or len(seed_key) < MIN_SECRET_LENGTH
        ):
            raise ValueError(
                "GRADER_ENV=production: GRADER_CASE_SEED_SECRET is an example default or shorter "
                f"than {MIN_SECRET_LENGTH} characters; set a random one "
                "(e.g. `openssl rand -hex 24`)"
            )
        return self

    @property
    def secure_cookies(self) -> bool:
        if self.session_cookie_secure is not None:
            return self.session_cookie_secure
        return self.env == "production"

    @property
    def oidc_enabled(self) -> bool:
        return bool(self.oidc_issuer and self.oidc_client_id)

    @property
    def extra_problem_dirs(self) -> list[Path]:
        return [Path(part) for part in self.problem_dirs.split(":") if part.strip()]

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'grader.sqlite3'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
