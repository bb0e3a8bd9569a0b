"""Well-known secret shapes → `[redacted:KIND]`, so a key pasted into a session is neither
stored nor re-injected into a later prompt.

One table for tsm (session text is redacted before it is stored) and for the prompt hook
(which never injects a snippet holding a secret): `plugin/hooks/redaction.py` is a byte-for-
byte copy of this file, because the plugin cannot import tsm (tests/text/test_redaction.py
checks they are equal). So: standard library only, Python 3.9+.

Every pattern is linear-time: each starts with a literal or a short keyword and has only
bounded repeats, so no input makes the regex engine backtrack beyond a constant per position.
Private-key blocks are found with plain string searches instead, so a text full of BEGIN lines
without an END costs one pass.
"""

from __future__ import annotations

import re

MARKER = "[redacted:{}]"

# (kind, anchors, pattern, folded). A pattern is tried only on text that holds one of its
# anchors (a plain substring test, so most text skips most patterns, and a pattern is
# compiled the first time it is needed: the prompt hook pays only for what it uses).
# A pattern with a group named `secret` redacts only that group (the key name of an
# assignment, the user and host of a URL stay readable); otherwise the whole match.
# A folded pattern is written in lower case and matched against the text lower-cased:
# case-insensitive at the speed of a case-sensitive search; its anchors are lower case too.
# Each pattern opens with a literal (its guard against a longer word, a look-behind, comes
# after it): the engine then jumps between the literal's occurrences instead of trying every
# position, ~50× faster. Order matters: provider shapes come before generic assignments.
PATTERNS: tuple[tuple[str, tuple[str, ...], str, bool], ...] = (
    ("anthropic-key", ("sk-ant-",), r"sk-ant-(?<![\w-]sk-ant-)[A-Za-z0-9_-]{20,300}", False),
    (
        "openai-key",
        ("sk-",),
        r"sk-(?<![\w-]sk-)(?:proj-|svcacct-|admin-|None-)?"
        r"(?=[\w-]{0,40}\d)[A-Za-z0-9_-]{32,300}",
        False,
    ),
    ("github-token", ("gh",), r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{36,255}", False),
    (
        "github-token",
        ("github_pat_",),
        r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,255}",
        False,
    ),
    (
        "gitlab-token",
        ("gl",),
        r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas)-[A-Za-z0-9_-]{20,64}",
        False,
    ),
    (
        "slack-token",
        ("xox",),
        r"xox[abposre]-(?<![A-Za-z0-9_-]xox[abposre]-)[A-Za-z0-9-]{10,250}",
        False,
    ),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,200}",
        False,
    ),
    (
        "stripe-key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        r"[sr]k_(?:live|test)_(?<![A-Za-z0-9_][sr]k_live_)(?<![A-Za-z0-9_][sr]k_test_)"
        r"[A-Za-z0-9]{16,250}",
        False,
    ),
    ("stripe-key", ("whsec_",), r"whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{24,100}", False),
    ("google-api-key", ("AIza",), r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}", False),
    (
        "huggingface-token",
        ("hf_",),
        r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,40}(?![A-Za-z0-9])",
        False,
    ),
    ("npm-token", ("npm_",), r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])", False),
    ("pypi-token", ("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_-]{50,1000}", False),
    (
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"A(?:KIA|SIA|BIA|CCA)(?<![A-Za-z0-9]A[A-Z]{3})[A-Z0-9]{16}(?![A-Za-z0-9])",
        False,
    ),
    (
        "aws-secret-key",
        ("aws",),
        r"aws[\w.-]{0,30}?secret[\w.-]{0,30}?[\"']?\s{0,5}[:=]{1,2}\s{0,5}[\"']?"
        r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])",
        True,
    ),
    (
        "jwt",
        ("eyJ",),
        r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,8000}"
        r"\.[A-Za-z0-9_-]{0,2000}",
        False,
    ),
    ("bearer-token", ("bearer",), r"bearer {1,5}(?P<secret>[a-z0-9._~+/-]{20,2000}={0,2})", True),
    (
        "basic-auth",
        ("authorization",),
        r"authorization[\"']?\s{0,5}[:=]\s{0,5}[\"']?basic {1,5}"
        r"(?P<secret>[a-z0-9+/]{12,1000}={0,2})(?![\w+/=])",
        True,
    ),
    (
        "url-credentials",
        ("://",),
        r"://[^\s/:@'\"<>]{0,100}:(?P<secret>[^\s/@'\"<>]{1,200})@(?=[\w\[])",
        False,
    ),
    (
        "password",
        ("pass", "secret", "token", "key", "cred"),
        r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|"
        r"secret[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)"
        r"[\"']?\s{0,5}(?::|=|:=)\s{0,5}(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|"
        r"[^\s\"'`<>()\[\]{},;=][^\s\"'`<>()\[\]{},;]{0,199})",
        True,
    ),
)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Characters that must not come just before a match (a look-behind of variable width, which
# the regex engine cannot do): key names start a word, `password=` and `db_password=` but not
# `mypassword=`.
_NOT_AFTER = {
    kind: frozenset(_LETTERS)
    for kind in ("password", "aws-secret-key", "bearer-token", "basic-auth")
}
_NOT_AFTER["gitlab-token"] = frozenset(_LETTERS + "0123456789_-")

_compiled: dict[str, re.Pattern[str]] = {}
_CASED_ANCHORS = frozenset(a for _, anchors, _, folded in PATTERNS if not folded for a in anchors)
_FOLDED_ANCHORS = frozenset(a for _, anchors, _, folded in PATTERNS if folded for a in anchors)

# Values of a `password=` shape that are code or placeholders, not secrets: `token: string`,
# `password = None`, `secret: ${SECRET}`, `api_key=os.environ[...]`.
_NOT_A_VALUE = (
    r"(?i)(?:str|string|int|bool|boolean|number|bytes|any|none|null|nil|undefined|true|"
    r"false|optional|secretstr|required|\*+|x+|\.+|<[^>]*>|redacted|hidden|changeme)\Z|"
    r"[$%{@]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z|\[redacted:"
)

_IDENTIFIER = r"[A-Za-z_]\w*\Z"
_SNAKE_CASE = r"[a-z]+(?:_[a-z]+)+\Z"
_KEY_WORD = r"(?i)pass|secret|token|key|cred"

_KEY_HEADER = r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
_KEY_END = r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
_KEY_BODY = r"[A-Za-z0-9+/=\s\\:,.-]{0,65536}"
MAX_KEY_CHARS = 65536  # a 16384-bit RSA key in PEM is ~12 KB


def redact(text: str) -> str:
    """`text` with every secret shape replaced by `[redacted:KIND]`."""
    return _redact_all(text)[0]


def find_secrets(text: str) -> list[str]:
    """The kinds of secret `text` holds, in table order (empty when there are none)."""
    return _redact_all(text)[1]


def _redact_all(text: str) -> tuple[str, list[str]]:
    """Passes until nothing changes: a marker can end the word a key was glued to
    (`AIza…sk-…`: the `sk-` key starts a word only once the Google key before it is gone)."""
    kinds: list[str] = []
    for _ in range(4):
        redacted, found = _redact(text)
        kinds += [kind for kind in found if kind not in kinds]
        if redacted == text:
            break
        text = redacted
    return text, kinds


def _redact(text: str) -> tuple[str, list[str]]:
    kinds = []
    redacted = _redact_private_keys(text)
    if redacted != text:
        kinds.append("private-key")
    lowered = redacted.lower()
    # Which anchors occur, in one pass per anchor: most text holds none, and then no pattern
    # runs (redaction only removes text, so an anchor absent now stays absent).
    present = {a for a in _CASED_ANCHORS if a in redacted}
    present.update(a for a in _FOLDED_ANCHORS if a in lowered)
    if not present:
        return redacted, kinds
    for kind, anchors, pattern, folded in PATTERNS:
        if present.isdisjoint(anchors):
            continue
        text, redacted = (
            redacted,
            _substitute(pattern, kind, redacted, lowered if folded else redacted),
        )
        if redacted != text:
            lowered = redacted.lower()
            if kind not in kinds:
                kinds.append(kind)
    return redacted, kinds


def _substitute(pattern: str, kind: str, text: str, haystack: str) -> str:
    """`text` with the matches of `pattern` in `haystack` (itself, or lower-cased) replaced."""
    if len(haystack) != len(text):  # a rare character lower-cases to two: match `text`
        regex, haystack = _compile(pattern, re.IGNORECASE), text
    else:
        regex = _compile(pattern, 0)
    out: list[str] = []
    pos = 0
    for match in regex.finditer(haystack):
        start, end = match.span()
        replaced = _replacement(text, match, kind)
        if replaced is not None:
            out.append(text[pos:start] + replaced)
            pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    key = f"{flags}:{pattern}"
    if key not in _compiled:
        _compiled[key] = re.compile(pattern, flags)
    return _compiled[key]


def _replacement(text: str, match: re.Match[str], kind: str) -> str | None:
    """What replaces the match in `text` (the original case), or None to keep it."""
    start, end = match.span()
    if start and text[start - 1] in _NOT_AFTER.get(kind, ()):
        return None
    if "secret" not in match.re.groupindex:
        return MARKER.format(kind)
    value_start, value_end = match.span("secret")
    value = text[value_start:value_end]
    quote = value[0] if value[0] in "\"'" else ""
    bare = value[1:-1] if quote else value
    if (
        len(bare) < 3
        or _compile(_NOT_A_VALUE, 0).match(bare)
        or kind == "password"
        and not quote
        and _is_code(text[end : end + 1], bare)
    ):
        return None
    return text[start:value_start] + quote + MARKER.format(kind) + quote + text[value_end:end]


def _is_code(after: str, value: str) -> bool:
    """An unquoted value that is an expression: a call or index (`get_token()`, `env["X"]`),
    a variable named after the key (`password = password`, `token=new_token`), or a
    snake_case variable (`secret = tmp_path / "x"`): a secret has no reason to be one."""
    if after in ("(", "["):
        return True
    if _compile(_SNAKE_CASE, 0).match(value):
        return True
    return (
        _compile(_IDENTIFIER, 0).match(value) is not None
        and _compile(_KEY_WORD, 0).search(value) is not None
    )


def _redact_private_keys(text: str) -> str:
    """PEM and OpenSSH private-key blocks, BEGIN through END, or through the end of the key's
    characters when the END line is missing (a key cut off in a pasted log or a snippet); an
    END line without its BEGIN takes the key characters before it."""
    if "PRIVATE KEY" not in text:
        return text
    marker = MARKER.format("private-key")
    out: list[str] = []
    pos = 0
    ends = [m.span() for m in _compile(_KEY_END, 0).finditer(text)]
    next_end = 0  # index into ends: the first END at or after the current position
    for begin in _compile(_KEY_HEADER, 0).finditer(text):
        if begin.start() < pos:
            continue  # inside a block already redacted
        while next_end < len(ends) and ends[next_end][0] < begin.end():
            end_start, end_stop = ends[next_end]
            if end_start >= pos:  # an END with no BEGIN: redact the key characters before it
                body_start = _body_start(text, pos, end_start)
                out.append(text[pos:body_start] + marker)
                pos = end_stop
            next_end += 1
        if next_end < len(ends) and ends[next_end][0] - begin.end() <= MAX_KEY_CHARS:
            stop = ends[next_end][1]
            next_end += 1
        else:
            body = _compile(_KEY_BODY, 0).match(text, begin.end())
            stop = body.end() if body else begin.end()
        out.append(text[pos : begin.start()] + marker)
        pos = stop
    for end_start, end_stop in ends[next_end:]:
        if end_start >= pos:
            body_start = _body_start(text, pos, end_start)
            out.append(text[pos:body_start] + marker)
            pos = end_stop
    out.append(text[pos:])
    return "".join(out)


def _body_start(text: str, floor: int, end: int) -> int:
    """Where the key characters that run up to `end` begin (not before `floor`)."""
    start = max(floor, end - MAX_KEY_CHARS)
    body = text[start:end]
    keep = len(
        body.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n\r\\")
    )
    return start + keep
