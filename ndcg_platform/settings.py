"""Settings: what an operator sets, read from the environment once, with its default here.

A bad value stops the process with a message naming the variable. Internal sizes, periods
and queue names are constants in the code that uses them, each with its reason; the README's
Configuration table lists every variable read here (tests/test_settings_documented.py).
"""

import json
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


# "development" allows an insecure generated key and debug; "production" requires real values.
DJANGO_ENV = os.environ.get("DJANGO_ENV", "development")
if DJANGO_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"DJANGO_ENV={DJANGO_ENV!r} must be 'development' or 'production'")
PRODUCTION = DJANGO_ENV == "production"

DEBUG = env_bool("DJANGO_DEBUG", default=not PRODUCTION)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_ENV=production")
    SECRET_KEY = "insecure-development-key-never-use-in-production"

ALLOWED_HOSTS = env_list(
    "DJANGO_ALLOWED_HOSTS", [] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DJANGO_ENV=production")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # Its runserver passes the raw request target (before staticfiles', which it extends).
    "ndcg_platform.devserver",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "annotations",
]

MIDDLEWARE = [
    # First: a %2F in a path segment is re-read from the raw request target before routing.
    "annotations.middleware.RawPathMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "annotations.middleware.RefuseNulMiddleware",
    "annotations.middleware.RefuseInvalidUtf8Middleware",
    "annotations.lockouts.ProxyCountWarningMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last: it answers a locked-out login attempt itself.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "ndcg_platform.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "ndcg_platform.wsgi.application"

# Without DATABASE_URL the embedded default is a SQLite file next to manage.py.
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
try:
    DATABASES = {
        "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
except Exception as exc:  # dj_database_url raises several types for malformed URLs
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The platform's own hot statements (a judgement's rows, a recomputation's reads) run on
    # server-binding cursors: psycopg prepares each on the server once a connection has run
    # it a few times, so PostgreSQL no longer parses and plans it on every grade.
    # `?prepare_threshold=0` in DATABASE_URL turns this off (a connection pooler in
    # transaction mode that cannot keep prepared statements).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["prepare_threshold"] = _options.get("prepare_threshold", 5) or None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several writers (server, import commands) share the file: wait instead of failing.
    # Write-ahead logging: pages (the import page polling its jobs) read while a long import
    # writes, instead of waiting for its commit.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, for the test database: a Celery worker process in the tests must
    # see the same data.
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / f".test-db-{os.getpid()}.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS: list[Path] = []
# Serve static files straight from the apps (no collectstatic needed for the embedded start).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Mail (SMTP) only with DJANGO_EMAIL_HOST set: then set-password links of new accounts are
# also mailed; without it they are only shown to the organiser who created the account.
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "")
if EMAIL_HOST:
    EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 587, minimum=1)
    EMAIL_HOST_USER = os.environ.get("DJANGO_EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", True)
    DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "webmaster@localhost")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

if PRODUCTION:
    SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# HTTPS: on by default in production, each settable from the environment. Behind a TLS
# proxy, DJANGO_SECURE_PROXY_SSL_HEADER=true trusts its X-Forwarded-Proto header.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", PRODUCTION)
if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy: the app's pages load scripts, styles and images from this site
# only (no inline script or style anywhere). The stock admin is left out of the policy.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/admin/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# Login throttling (django-axes, annotations/lockouts.py): after NDCG_LOGIN_FAILURES failed
# logins for one account from one address, or that many from each of several addresses for
# one account (lockouts.ACCOUNT_ADDRESSES), further attempts are refused for
# NDCG_LOGIN_COOLOFF_MINUTES. Never per address alone: made-up usernames lock out nobody
# else. Refused attempts are not failures, and one address counts at most
# NDCG_LOGIN_FAILURES towards the account's total. Staff see the attempts in the admin.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "annotations.lockouts.LockoutHandler"
AXES_FAILURE_LIMIT = env_int("NDCG_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("NDCG_LOGIN_COOLOFF_MINUTES", 15, minimum=1) / 60  # hours
# An attempt refused while locked out is not recorded: it neither counts as a failure nor
# extends the cool-off (axes' default records it as one).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username"]
AXES_RESET_ON_SUCCESS = True  # the pair's own failures only (LockoutHandler)
AXES_LOCKOUT_CALLABLE = "annotations.api_errors.lockout_response"
# Behind a reverse proxy: the number of proxies, so that the client's own address is read
# from X-Forwarded-For (a warning is logged when that header arrives and this is 0).
AXES_IPWARE_PROXY_COUNT = env_int("NDCG_PROXY_COUNT", 0)

# Uploads (run files through the API) are streamed to disk above this size and refused above
# NDCG_MAX_UPLOAD_MB.
NDCG_MAX_UPLOAD_MB = env_int("NDCG_MAX_UPLOAD_MB", 200, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# The import page: one upload (a track's run files together) may hold up to this many MB
# and files (each file still at most NDCG_MAX_UPLOAD_MB). Uploads are kept in
# the uploads storage until their import job succeeds, fails on the file itself, or is
# dismissed (a job failed otherwise keeps its upload for Retry); workers must see the same
# storage.
NDCG_IMPORT_MAX_MB = env_int("NDCG_IMPORT_MAX_MB", 4096, minimum=1)
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("NDCG_IMPORT_MAX_FILES", 500, minimum=1)
NDCG_UPLOAD_DIR = Path(os.environ.get("NDCG_UPLOAD_DIR") or BASE_DIR / "var" / "uploads")
# Where uploads are kept: the directory above (one machine, or a directory every machine
# mounts), or any Django storage backend named by NDCG_UPLOAD_STORAGE with the keyword
# options of NDCG_UPLOAD_STORAGE_OPTIONS (a JSON object), so that web servers and workers
# on different hosts share import jobs; e.g. django-storages' S3 backend
# (storages.backends.s3.S3Storage, {"bucket_name": ..., "endpoint_url": ...}).
NDCG_UPLOAD_STORAGE = os.environ.get("NDCG_UPLOAD_STORAGE", "").strip()


def _storage_options(name: str) -> dict[str, object]:
    raw = os.environ.get(name, "").strip() or "{}"
    try:
        options = json.loads(raw)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} is not JSON: {error}") from None
    if not isinstance(options, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object of the backend's options")
    return options


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "uploads": (
        {"BACKEND": NDCG_UPLOAD_STORAGE, "OPTIONS": _storage_options("NDCG_UPLOAD_STORAGE_OPTIONS")}
        if NDCG_UPLOAD_STORAGE
        else {"BACKEND": "annotations.services.upload_store.UploadDirectory"}
    ),
}

# Background work (recomputations, leaderboard refreshes, imports, webhooks, judges' runs)
# runs on Celery workers in every configuration. Production sets CELERY_BROKER_URL (Redis);
# without it the broker is kombu's filesystem transport under var/celery, which needs no
# server: `make demo` starts a worker beside the web server, and any command or worker
# started from this directory shares its queues.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "") or "filesystem://localhost/"
EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
VAR_DIR = BASE_DIR / "var"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker outlives a broker outage of any length: it retries the connection for ever (Celery
# gives up after 100 attempts by default, and the worker exits) and survives losing it with
# tasks in hand (ndcg_platform/celery.py: Consumer).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CONSUMER = "ndcg_platform.celery:Consumer"
# Celery closes every database connection before and after each task unless told to reuse
# them: a new PostgreSQL backend per recomputation. Reused here, and checked after each task
# as Django checks after each request (CONN_MAX_AGE, errors: ndcg_platform/celery.py).
CELERY_DB_REUSE_MAX = 10_000
# Publishing a task never holds a request up: no publish retries, short socket timeouts. A
# task that cannot be published leaves its scores marked pending for the sweep to heal.
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    "socket_connect_timeout": 1,
    "socket_timeout": 2,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 1
if EMBEDDED_BROKER:
    # One folder is both ends of every queue; a worker looks for new messages every tenth of
    # a second, so a grade's scores follow within a second (docs/decisions/0007).
    _QUEUE_DIR = VAR_DIR / "celery" / "queue"
    _CONTROL_DIR = VAR_DIR / "celery" / "control"
    for _folder in (_QUEUE_DIR, _CONTROL_DIR):
        _folder.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(_QUEUE_DIR),
        data_folder_out=str(_QUEUE_DIR),
        control_folder=str(_CONTROL_DIR),
        polling_interval=0.1,
    )
# `load_demo` writes the demo accounts here and `serve_demo` prints them.
NDCG_DEMO_ACCOUNTS_FILE = os.environ.get("NDCG_DEMO_ACCOUNTS_FILE") or str(
    BASE_DIR / "demo-accounts.txt"
)

# "default" (throttling) is per process; "coordination" marks tasks as queued across
# processes (one leaderboard refresh per collection at a time) and carries an import job's
# progress on SQLite: the broker's Redis when there is one, or DJANGO_CACHE_URL; with the
# embedded broker, files under var/coordination, which every process on this machine sees.
_LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
_COORDINATION_URL = os.environ.get("DJANGO_CACHE_URL", "") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
if _COORDINATION_URL:
    _COORDINATION: dict[str, object] = {
        "BACKEND": "ndcg_platform.redis_cache.PooledRedisCache",
        "LOCATION": _COORDINATION_URL,
        "KEY_PREFIX": "ndcg",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
elif EMBEDDED_BROKER:
    _COORDINATION = {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "coordination"),
    }
else:
    _COORDINATION = {"BACKEND": _LOCMEM, "LOCATION": "coord"}
# Marks coalesce tasks only where every process sees them.
NDCG_COORDINATION_SHARED = _COORDINATION["BACKEND"] != _LOCMEM
CACHES = {
    "default": {"BACKEND": _LOCMEM},
    "coordination": _COORDINATION,
}

# Targets that resolve to private, loopback or link-local addresses are refused unless
# allowed: a webhook's with NDCG_WEBHOOK_ALLOW_PRIVATE=true, a machine judge's (a model
# server on this machine or a private network: vLLM, Ollama, a llama.cpp server) with
# NDCG_JUDGE_ALLOW_PRIVATE=true.
NDCG_WEBHOOK_ALLOW_PRIVATE = env_bool("NDCG_WEBHOOK_ALLOW_PRIVATE", False)
NDCG_JUDGE_ALLOW_PRIVATE = env_bool("NDCG_JUDGE_ALLOW_PRIVATE", False)
# And search systems' endpoints: an engine on this machine or a private network
# (Elasticsearch, OpenSearch, Solr behind the firewall) needs NDCG_SEARCH_ALLOW_PRIVATE=true.
NDCG_SEARCH_ALLOW_PRIVATE = env_bool("NDCG_SEARCH_ALLOW_PRIVATE", False)

# Scores before derived data: recomputations stay on the default queue ("celery"); the
# leaderboard snapshots, impact and flip marks go to "derived" and import jobs to "imports",
# each served by a worker of its own (see docs/operations.md), so a judgement's
# recomputation never waits behind them. Calls out to addresses organisers chose (webhook
# deliveries, machine judges' runs) go to "outbound" (`make worker-outbound`), so that slow
# targets never hold up a leaderboard or an import. The Makefile's workers name the same
# queues.
CELERY_TASK_ROUTES = {
    name: {"queue": queue}
    for name, queue in (
        ("annotations.tasks.refresh_leaderboards", "derived"),
        ("annotations.tasks.refresh_significance", "derived"),
        ("annotations.tasks.idempotency_purge", "derived"),
        ("annotations.tasks.import_job_run", "imports"),
        ("annotations.tasks.judge_run_execute", "outbound"),
        ("annotations.tasks.system_fetch_run", "outbound"),
        ("annotations.tasks.webhooks_send", "outbound"),
        ("annotations.tasks.webhooks_sweep", "outbound"),
    )
}
CELERY_BEAT_SCHEDULE = {
    # Pending scores a lost task left behind, and leaderboards left behind the scores: healed
    # within a minute of the broker's return.
    "scores-sweep-stale": {"task": "annotations.tasks.scores_sweep_stale", "schedule": 60.0},
    # A third of the dead limit (services/job_recovery.py: DEAD_SECONDS), so that a stopped
    # worker's job fails within a minute.
    "import-jobs-sweep": {"task": "annotations.tasks.import_jobs_sweep", "schedule": 15.0},
    # Judge runs whose task was lost (queued too long) or whose worker stopped (silent
    # longer than their judge's longest pair): queued again.
    "judge-runs-sweep": {"task": "annotations.tasks.judge_runs_sweep", "schedule": 60.0},
    "idempotency-purge": {"task": "annotations.tasks.idempotency_purge", "schedule": 3600.0},
    # Deliveries whose wake was lost (broker down), retries due, the log's old rows.
    "webhooks-sweep": {"task": "annotations.tasks.webhooks_sweep", "schedule": 30.0},
    # Search systems fetched every N hours: a fetch starts within this long of its time.
    "system-fetches-sweep": {"task": "annotations.tasks.system_fetches_sweep", "schedule": 300.0},
}

# The browsable API (HTML forms at ?format=api) only where asked for; JSON alone otherwise.
_RENDERERS = ["rest_framework.renderers.JSONRenderer"]
if env_bool("NDCG_BROWSABLE_API", not PRODUCTION):
    _RENDERERS.append("rest_framework.renderers.BrowsableAPIRenderer")

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": _RENDERERS,
    # JSON bodies only (a form-encoded or multipart body is a 415, not silently empty data);
    # run uploads add multipart themselves.
    "DEFAULT_PARSER_CLASSES": ["annotations.parsers.SafeJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotations.authentication.PreparedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "annotations.openapi.ApiSchema",
    # OPTIONS describes the body each write takes, for the writes the caller may make.
    "DEFAULT_METADATA_CLASS": "annotations.metadata.ApiMetadata",
    "EXCEPTION_HANDLER": "annotations.api_errors.api_exception_handler",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "annotations.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    # Per process (the "default" cache): a cap against runaway scripts, not a quota.
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("NDCG_THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("NDCG_THROTTLE_USER", "6000/minute"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "nDCG judging and scoring platform API",
    "DESCRIPTION": "Collections, runs, graded judgements and trec_eval-exact nDCG@k scores.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/schema/ and /api/docs/ for anonymous callers: on in development, off in production
    # unless NDCG_PUBLIC_API_SCHEMA=true (logged-in users and tokens always read them).
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny"
        if env_bool("NDCG_PUBLIC_API_SCHEMA", not PRODUCTION)
        else "rest_framework.permissions.IsAuthenticated"
    ],
    # Swagger UI from the installed sidecar package: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Path segments as the converters take them: a slug, and an id written as one segment
    # ("/" as "~2F", see annotations/converters.py).
    # Operation ids and tags from the path after the version: `collections_runs_create`.
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Enums whose field name other choices share: named for what they hold.
    "ENUM_NAME_OVERRIDES": {
        "JudgeRunFailureKindEnum": "annotations.models.judges.JudgeRunFailure.KIND_CHOICES",
        "KindEnum": ["topics", "documents", "qrels", "run"],  # an import job's
        # an import job's and a fetch's (an import job of its own kind)
        "ImportJobStateEnum": "annotations.models.jobs.ImportJob.STATE_CHOICES",
        "ScopeEnum": "annotations.models.judges.JudgeRun.SCOPE_CHOICES",  # a run asked for
        "JudgeRunScopeEnum": "annotations.models.judges.JudgeRun.SCOPES",  # a run's, retries too
    },
    "PATH_CONVERTER_OVERRIDES": {
        "slug": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"},
        "id": {
            "type": "string",
            "minLength": 1,
            "pattern": "^[^/\\u0000]+$",
            "description": "An id as one path segment: `/` written `~2F`, `~` written `~7E`, "
            "an id `.` or `..` with `~2E` for each dot (also from a generated client: HTTP "
            "clients resolve dot segments, `%2E` included); then percent-encoded as usual. No "
            "NUL (a path holding one is a 400).",
        },
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "annotations.openapi.error_responses",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "WARNING")},
}
