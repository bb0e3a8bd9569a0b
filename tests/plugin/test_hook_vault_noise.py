"""The prompt hook on documentation that sits close to everyday coding requests,
through the real hook script, the real CLI and the real embedding model.

A web framework's docs are near "center a div" or "add a health check endpoint" as a diary
never is: such a request is closer to one of these pages than to most generic requests, so
the relevance floor alone lets the page in. The search reports the vault's noise level (the
relevance only 1 % of the generic requests reach against it) and whether the prompt names a
hit by a word of its path; the hook wants a hit the prompt does not name to reach that level.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_harness import HookRun, ask_hook, index_vault, needs_tsm, trust, tsm_cli

from tsm.core.context import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_DROP,
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_TOP_K,
    build_query,
)

pytestmark = needs_tsm

NOTES = {
    "webfw/README.md": """\
<div align="center">
  <img src="logo.png" alt="webfw" width="300">
</div>

# webfw

An efficient server implies a lower cost of the infrastructure, a better responsiveness
under load and happy users. webfw is a web framework focused on providing the best
developer experience with the least overhead and a powerful plugin architecture.
""",
    "webfw/guides/getting-started.md": """\
# Getting started

Install with `npm i webfw`, create `server.js`, register a route with
`app.get('/', async () => ({ hello: 'world' }))` and call `app.listen({ port: 3000 })`.
Use `npm init webfw` to scaffold a project with tests and linting already set up.
""",
    "webfw/guides/testing.md": """\
# Testing

webfw ships `app.inject()`, which sends a fake HTTP request through the whole request
lifecycle without opening a socket. Build the app in a function, call
`inject({ method: 'GET', url: '/' })` and assert on the status code and the JSON body.
Close the app in the test's teardown so no handle stays open.
""",
    "webfw/guides/deployment.md": """\
# Deployment

Run webfw behind a reverse proxy such as nginx in production, listen on `0.0.0.0` inside a
container, and build a small image with a multi-stage Dockerfile. Set `trustProxy` so
`request.ip` is the client's address and not the proxy's.
""",
    "webfw/guides/serverless.md": """\
# Serverless

webfw runs on AWS Lambda and Google Cloud Functions through `@webfw/aws-lambda`: export the
handler it returns instead of calling `listen`. Cold starts are shorter when plugins are
loaded lazily.
""",
    "webfw/guides/database.md": """\
# Database

Connect to PostgreSQL, MySQL or MongoDB with the official plugins; each decorates the app
with a connection pool and closes it in an `onClose` hook. Run migrations before
`listen`, not in a route.
""",
    "webfw/guides/migration-v5.md": """\
# Migrating to v5

v5 requires Node.js 20, removes the deprecated `reply.sent` property, and makes the
`logger` option accept only a configuration object; pass your own logger instance with
`loggerInstance` instead.
""",
    "webfw/guides/benchmarking.md": """\
# Benchmarking

Measure with `autocannon -c 100 -d 40 http://localhost:3000` against a production build,
with logging off, and compare requests per second and latency percentiles between
versions.
""",
    "webfw/reference/routes.md": """\
# Routes

Declare a route with `app.route({ method, url, schema, handler })` or the shorthand
`app.get(url, options, handler)`. Path parameters use `:name`, wildcards `*`; a route's
`schema` validates `body`, `querystring`, `params` and `headers`.
""",
    "webfw/reference/validation.md": """\
# Validation and serialization

Request bodies are validated with JSON Schema (Ajv); a failing request gets a 400 reply
with the validation errors. A `response` schema serializes replies two to three times
faster than `JSON.stringify` and drops fields the schema does not list.
""",
    "webfw/reference/errors.md": """\
# Errors

Throwing inside an async handler sends a 500 reply with the error serialized as JSON;
`setErrorHandler` customizes it. Errors carry a code such as
`FST_ERR_CTP_INVALID_MEDIA_TYPE` (415: no content type parser for the request's type).
""",
    "webfw/reference/hooks.md": """\
# Hooks

Hooks run code at a point of the request lifecycle. `onRequest` runs first, before the body
is parsed; `preHandler` runs after validation, right before the route handler, and is the
place for authentication checks that need the parsed body.
""",
    "webfw/reference/decorators.md": """\
# Decorators

`app.decorate(name, value)` adds a property to the app, `decorateRequest` and
`decorateReply` to every request and reply. Decorate with `null` and assign in a hook: an
object passed as the initial value would be shared by all requests.
""",
    "webfw/reference/plugins.md": """\
# Plugins

Everything in webfw is a plugin: routes, decorators and hooks are registered with
`app.register(plugin, options)`. A plugin gets its own encapsulated context, so decorators
it adds are invisible to its parent unless it is wrapped with `webfw-plugin`.
""",
    "webfw/reference/logging.md": """\
# Logging

The logger is off by default. Pass `logger: true` to log every request and response as JSON
lines. `request.log` is a child logger bound to the request id, so every line of one request
can be found together; `redact` hides headers such as authorization.
""",
    "webfw/reference/typescript.md": """\
# TypeScript

webfw is written in TypeScript and ships its own types. Type a route's body and querystring
with generics (`app.get<{ Querystring: Query }>(...)`) or let a type provider infer them from
the JSON schema. Enable `strict` in tsconfig.json for the best inference.
""",
    "webfw/reference/websocket.md": """\
# WebSocket

`webfw-websocket` upgrades a route to a WebSocket: declare the route with `{ websocket:
true }` and the handler receives the socket. Set `options.pingInterval` to send pings so
idle proxies do not close the connection.
""",
    "webfw/reference/content-type-parser.md": """\
# Content type parsers

webfw parses `application/json` and `text/plain` bodies. Add a parser for another type with
`app.addContentTypeParser('application/x-www-form-urlencoded', parser)`; the `bodyLimit`
option caps the body size (1 MiB by default, 413 above it).
""",
    "webfw/reference/cors.md": """\
# CORS

`@webfw/cors` answers preflight requests and sets `Access-Control-Allow-Origin`. Pass an
array of allowed origins or a function; `credentials: true` requires an explicit origin,
never `*`.
""",
    "webfw/reference/rate-limit.md": """\
# Rate limiting

`@webfw/rate-limit` counts requests per client in memory or in Redis and replies 429 with a
`retry-after` header once `max` requests were made within `timeWindow`.
""",
    "webfw/reference/static.md": """\
# Static files

`@webfw/static` serves a folder under a prefix, with ETags, range requests and
precompressed `.br` and `.gz` files; set `maxAge` for the cache-control header.
""",
    "webfw/reference/server.md": """\
# Server options

`webfw(options)`: `logger`, `bodyLimit`, `connectionTimeout`, `keepAliveTimeout`,
`trustProxy`, `http2`, `https` and `genReqId`, which makes the request id (by default a
counter; return `crypto.randomUUID()` for UUIDs).
""",
    "webfw/reference/shutdown.md": """\
# Graceful shutdown

`app.close()` stops accepting connections, runs the `onClose` hooks and resolves once the
in-flight requests are done; call it on SIGTERM. `return503OnClosing` answers new requests
with 503 meanwhile.
""",
    "webfw/reference/multipart.md": """\
# File uploads

`@webfw/multipart` streams `multipart/form-data` parts: `for await (const part of
request.parts())`. Limit `fileSize` and `files`, and pipe each file to storage instead of
buffering it.
""",
    "webfw/reference/env.md": """\
# Configuration from the environment

`@webfw/env` reads `.env` and `process.env`, validates the variables against a JSON schema
and decorates the app with `app.config`; a missing required variable stops the start-up
with a clear error.
""",
    "webfw/reference/auth.md": """\
# Authentication

`@webfw/jwt` signs and verifies JSON Web Tokens: `request.jwtVerify()` in an `onRequest`
hook rejects a request without a valid bearer token with 401. `@webfw/auth` combines
several strategies with `or` and `and`.
""",
    "webfw/reference/cookies.md": """\
# Cookies and sessions

`@webfw/cookie` parses the `Cookie` header into `request.cookies` and sets cookies with
`reply.setCookie(name, value, { httpOnly: true, secure: true, sameSite: 'lax' })`;
`@webfw/session` keeps a server-side session keyed by a signed cookie.
""",
    "webfw/reference/http2.md": """\
# HTTP/2

Pass `http2: true` with `https` options to serve HTTP/2 over TLS; `allowHTTP1` keeps HTTP/1.1
clients working. Streams share one connection, so a slow handler no longer blocks the
others.
""",
    "webfw/reference/reply.md": """\
# Reply

`reply.code(201).header('location', url).send(body)`; an async handler may return the body
instead. `reply.hijack()` hands the raw response to you: webfw then neither sends nor logs
it.
""",
    "webfw/guides/recommendations.md": """\
# Recommendations

Use a process manager or the container runtime to restart a crashed process, set
`keepAliveTimeout` above the load balancer's idle timeout, and give Kubernetes a readiness
probe route so traffic reaches a pod only once its plugins are loaded.
""",
    "webfw/guides/style.md": """\
# Writing style of these docs

Code samples use async/await, two spaces of indentation and no semicolons; every sample
must run as shown. Headings are in sentence case.
""",
    "webfw/guides/ecosystem.md": """\
# Ecosystem

Core plugins live under the `@webfw/` scope: cors, static, jwt, cookie, session, multipart,
rate-limit, env, swagger, websocket, redis, postgres and mongodb. Community plugins are
listed with their maintenance status.
""",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_vault(tmp_path_factory.mktemp("webfw-docs"), NOTES)


@pytest.fixture(autouse=True)
def trusted(vault: Path) -> None:
    trust(vault)


def paths(run: HookRun) -> list[str]:
    """The notes Claude Code would receive, in order; none when the hook stayed silent."""
    if not run.stdout:
        return []
    xml = run.output()["hookSpecificOutput"]["additionalContext"]
    return [r.findtext("source") or "" for r in ET.fromstring(xml).findall("result")]


def search(vault: Path, query: str) -> list[dict[str, object]]:
    done = tsm_cli("search", "-f", "json", "-k", "3", "-q", query, cwd=vault)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert isinstance(results, list)
    return results


def hook_search(vault: Path, prompt: str) -> list[dict[str, object]]:
    """The search the hook makes for `prompt`, with its arguments."""
    query = build_query(prompt)
    search = ["search", "-f", "json", "-k", str(DEFAULT_TOP_K), "--fallback", "fts-only"]
    done = tsm_cli(*search, f"--query={query}", cwd=vault)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert isinstance(results, list)
    return results


EVERYDAY = [
    # the kind of miss: README.md holds `<div align="center">`
    "how do I center a div with flexbox",
    "refactor the logger module in this repo to take its config from the constructor",
]


@pytest.mark.parametrize("prompt", EVERYDAY)
def test_an_everyday_request_near_the_docs_injects_nothing(vault: Path, prompt: str) -> None:
    assert paths(ask_hook(vault, prompt)) == []


@pytest.mark.parametrize("prompt", EVERYDAY)
def test_the_relevance_floor_alone_would_have_let_it_in(vault: Path, prompt: str) -> None:
    """What makes the test above one of the noise level: the top hit clears the plain
    relevance floor, not the keyword one, is not named by the prompt, and stays below the
    vault's noise level."""
    breakdown = search(vault, prompt)[0]["score_breakdown"]
    assert isinstance(breakdown, dict)
    assert breakdown["named"] is False
    assert breakdown["coverage"] < DEFAULT_MIN_COVERAGE
    assert DEFAULT_MIN_RELEVANCE <= breakdown["relevance"] < breakdown["noise"], breakdown


NAMED = ("which node version does webfw v5 need?", "webfw/guides/migration-v5.md")


def test_a_question_that_names_the_docs_gets_its_page_below_the_noise_level(
    vault: Path,
) -> None:
    prompt, page = NAMED
    assert page in paths(ask_hook(vault, prompt))[:3]


def test_that_page_is_named_and_below_the_noise_level(vault: Path) -> None:
    """What makes the test above one of the exemption: the page is named ("webfw" is a word
    of its path) and less relevant than the vault's noise level."""
    prompt, page = NAMED
    (hit,) = [r for r in search(vault, prompt) if r["source"]["path"] == page]  # type: ignore[index]
    breakdown = hit["score_breakdown"]
    assert isinstance(breakdown, dict)
    assert breakdown["named"] is True
    assert DEFAULT_MIN_RELEVANCE <= breakdown["relevance"] < breakdown["noise"], breakdown


# The same docs with the pages of 40 official plugins, all from one template, as real
# documentation has families of look-alike pages (API reference, rules, man pages).
PLUGINS = {
    "cors": "sets the Access-Control-Allow-Origin header from an allow-list of origins",
    "cookie": "parses the Cookie header into request.cookies and signs cookies with a secret",
    "static": "serves files from a folder with ETag and range support",
    "multipart": "streams uploaded files of multipart/form-data bodies to disk",
    "swagger": "generates an OpenAPI document from the route schemas",
    "helmet": "adds security headers such as Content-Security-Policy",
    "compress": "compresses replies with gzip, deflate or brotli",
    "etag": "adds an ETag header and answers 304 to a matching If-None-Match",
    "formbody": "parses application/x-www-form-urlencoded bodies",
    "view": "renders templates with handlebars, ejs or pug through reply.view",
    "websocket": "upgrades a route to a WebSocket and hands the handler a socket",
    "redis": "shares one Redis connection as app.redis",
    "postgres": "shares a PostgreSQL pool as app.pg",
    "mongodb": "shares a MongoDB client as app.mongo",
    "jwt": "signs and verifies JSON Web Tokens as request.jwtVerify",
    "session": "keeps a server-side session keyed by a signed cookie",
    "csrf": "checks a CSRF token on unsafe methods",
    "caching": "sets Cache-Control headers and keeps an in-memory cache",
    "circuit-breaker": "stops calling a route's handler after repeated failures",
    "accepts": "picks the reply type from the Accept header",
    "basic-auth": "checks HTTP Basic credentials with a validate function",
    "bearer-auth": "checks a bearer token against a list of keys",
    "http-proxy": "forwards requests under a prefix to an upstream server",
    "mysql": "shares a MySQL pool as app.mysql",
    "oauth2": "runs the OAuth 2 authorization code flow for GitHub, Google and others",
    "rate-limit": "limits requests per client address in a time window",
    "request-context": "keeps values for the lifetime of one request",
    "response-validation": "checks replies against their response schema in development",
    "schedule": "runs jobs on a cron schedule while the app is up",
    "sensible": "adds reply.notFound and other HTTP error helpers",
    "under-pressure": "answers 503 when the event loop is overloaded",
    "url-data": "parses the URL into its parts as request.urlData",
    "elasticsearch": "shares an Elasticsearch client as app.elastic",
    "kafka": "produces and consumes Kafka messages",
    "leveldb": "opens a LevelDB store as app.level",
    "nextjs": "serves a Next.js app's pages from webfw routes",
    "autoload": "registers every plugin and route found in a folder",
    "env": "loads and validates environment variables into app.config",
    "graphql": "serves a GraphQL schema at /graphql",
    "metrics": "exposes Prometheus metrics at /metrics",
}
PLUGIN_PAGES = {
    f"webfw/plugins/{name}.md": f"""\
# @webfw/{name}

The official {name} plugin for webfw: it {what}. Register it with
`app.register(require('@webfw/{name}'), options)` before the routes that use it. Its options
are checked when the app starts, and it stays encapsulated in the context it is registered in
unless the plugin is wrapped with `webfw-plugin`.
"""
    for name, what in PLUGINS.items()
}


@pytest.fixture(scope="module")
def family_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_vault(tmp_path_factory.mktemp("webfw-plugins"), NOTES | PLUGIN_PAGES)


# About the plugin pages; it names "webfw" (a word of every page's path) and "plugin".
FLAT = (
    "how do I register a webfw plugin only for routes under /admin",
    "webfw/reference/static.md",
)


def test_a_page_named_by_one_word_is_left_out_when_the_vectors_single_no_page_out(
    family_vault: Path,
) -> None:
    """A word of the prompt naming a page is weak evidence: the hook takes it only when the
    vector ranking singles a few pages out (`vector_drop`) or the prompt names two words of
    the page's path no generic request uses (`distinct_names`). Here the forty look-alike
    plugin pages leave the vectors a flat run: the plugin pages themselves come in on their
    relevance, a page that only shares the word "webfw" with the prompt does not."""
    trust(family_vault)
    prompt, page = FLAT
    injected = paths(ask_hook(family_vault, prompt))
    assert injected and all(p.startswith("webfw/plugins/") for p in injected), injected
    assert page not in injected


def test_that_page_is_named_below_the_noise_level_under_a_flat_ranking(
    family_vault: Path,
) -> None:
    """What makes the test above one of the new evidence: the page is in the hook's search,
    named ("webfw"), less relevant than the noise level but above the relevance floor (the
    rule before let it in), by one distinct word, and the vector ranking is flat."""
    prompt, page = FLAT
    results = hook_search(family_vault, prompt)
    (hit,) = [r for r in results if r["source"]["path"] == page]  # type: ignore[index]
    breakdown = hit["score_breakdown"]
    assert isinstance(breakdown, dict)
    assert breakdown["named"] is True
    assert breakdown["distinct_names"] == 1  # "webfw"; "plugin" is not a word of its path
    assert DEFAULT_MIN_RELEVANCE <= breakdown["relevance"] < breakdown["noise"], breakdown
    assert breakdown["vector_drop"] < DEFAULT_MIN_DROP, breakdown
    plugin_page = results[0]["score_breakdown"]
    assert isinstance(plugin_page, dict)
    assert plugin_page["distinct_names"] == 2  # "webfw" and "plugin"
