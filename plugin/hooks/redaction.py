"""Well-known secret shapes → `[redacted:KIND]`, and the invisible format characters that hide
text from a reader, for everything tsm hands to a model.

One table for tsm (session text is redacted before it is stored; MCP results are redacted
before they are returned) and for the prompt hook (which never injects a secret):
`plugin/hooks/redaction.py` is a byte-for-byte copy of this file, because the plugin
cannot import tsm (tests/text/test_redaction.py checks they are equal). So: standard library
only, Python 3.9+.

Every pattern is linear-time: each starts with a literal or a short keyword and has only
bounded repeats, so no input makes the regex engine backtrack beyond a constant per position.
Private-key blocks are found with plain string searches instead, so a text full of BEGIN lines
without an END costs one pass.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

MARKER = "[redacted:{}]"

# Every format (Cf) character of Unicode 16 and the whole TAG block: zero-width spaces and
# joiners, soft hyphen, word joiner, BOM, bidi controls, invisible operators, interlinear
# annotation marks, and the TAG characters that spell words no reader sees. A superset of the
# running Python's Cf set (tests/text/test_redaction.py checks it against unicodedata).
_FORMAT_BUT_ZWJ = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
FORMAT_CHARACTERS = _FORMAT_BUT_ZWJ + "\u200d"
# The zero-width joiner is kept between two emoji, where it draws one picture (👨‍👩‍👧);
# anywhere else it is as invisible as the rest.
_EMOJI = "\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff"
FORMAT_PATTERN = f"[{_FORMAT_BUT_ZWJ}]|(?<![{_EMOJI}])\u200d|\u200d(?![{_EMOJI}])"
_FORMAT = re.compile(FORMAT_PATTERN)


_ANY_FORMAT = re.compile(f"[{FORMAT_CHARACTERS}]")


def strip_format(text: str) -> str:
    """`text` without its format characters: what a model reads is what a person sees."""
    if text.isascii() or not _ANY_FORMAT.search(text):
        return text
    return _FORMAT.sub("", text)


def for_model(text: str, keep_lines: bool = False) -> str:
    """`text` as tsm hands it to a model: format characters removed, then secrets redacted."""
    return redact(strip_format(text), keep_lines)


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_WORDY = _LETTERS + "0123456789_-"

# (kind, anchors, pattern, folded, not_after). A pattern is tried only on text that holds one
# of its anchors (a plain substring test, so most text skips most patterns, and a pattern is
# compiled the first time it is needed: the prompt hook pays only for what it uses).
# A pattern with a group named `secret` redacts only that group (the key name of an
# assignment, the user and host of a URL stay readable); otherwise the whole match.
# A folded pattern is written in lower case and matched against the text lower-cased:
# case-insensitive at the speed of a case-sensitive search; its anchors are lower case too.
# Each pattern opens with a literal where it can (its guard against a longer word, a
# look-behind, comes after it): the engine then jumps between the literal's occurrences
# instead of trying every position, ~50× faster. `not_after` holds the characters that must
# not come just before a match (a look-behind of variable width, which the regex engine cannot
# do). When two matches overlap, the one of the earlier row names the marker: provider shapes
# come before generic assignments.
_CASED = False
_FOLDED = True
# Command-line options that hold a password only after certain commands: the pattern starts
# at the option (fast), and the line before it must name the command (within 300 characters).
_CURL_USER = r"-u(?<=\s-u)[ =]?[\"']?[^\s:\"'-][^\s:\"']{0,99}:(?P<secret>[^\s\"'@]{1,200})"
_MYSQL_PASSWORD = r"-p(?<=\s-p)(?P<secret>[^\s-][^\s]{0,199})"
_LOGIN_PASSWORD = r"-[pa](?<=\s-[pa])[ =](?P<secret>[^\s-][^\s]{0,199})"
_CONTEXT = {
    _CURL_USER: r"(?i)\bcurl\b",
    _MYSQL_PASSWORD: r"(?i)\b(?:mysql|mariadb)[\w-]{0,10}\b",
    _LOGIN_PASSWORD: r"(?i)\b(?:sshpass|login|redis-cli)\b",
}


def _rows(
    kind: str, names: tuple[str, ...], rest: str, folded: bool, not_after: str
) -> tuple[tuple[str, tuple[str, ...], str, bool, str], ...]:
    """One row per name (each pattern opening with its literal is what makes it fast)."""
    return tuple((kind, (name,), re.escape(name) + rest, folded, not_after) for name in names)


_KEY = r"[A-Za-z0-9_-]"
PATTERNS: tuple[tuple[str, tuple[str, ...], str, bool, str], ...] = (
    ("anthropic-key", ("sk-",), r"sk-ant-(?<![\w-]sk-ant-)[A-Za-z0-9_-]{20,300}", _CASED, ""),
    (
        "openai-key",
        ("sk-",),
        r"sk-(?<![\w-]sk-)(?:proj-|svcacct-|admin-|None-)?"
        r"(?=[\w-]{0,40}\d)[A-Za-z0-9_-]{32,300}",
        _CASED,
        "",
    ),
    (
        "github-token",
        ("gh",),
        r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{36,255}",
        _CASED,
        "",
    ),
    (
        "github-token",
        ("github_pat_",),
        r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,255}",
        _CASED,
        "",
    ),
    (
        "gitlab-token",
        ("gl",),
        r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas)-[A-Za-z0-9_-]{20,64}",
        _CASED,
        _WORDY,
    ),
    (
        "slack-token",
        ("xox",),
        r"xox[abposre]-(?<![A-Za-z0-9_-]xox[abposre]-)[A-Za-z0-9-]{10,250}",
        _CASED,
        "",
    ),
    ("slack-token", ("xapp-",), r"xapp-(?<![A-Za-z0-9_-]xapp-)\d-[A-Za-z0-9-]{10,250}", _CASED, ""),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,200}",
        _CASED,
        "",
    ),
    (
        "stripe-key",
        ("k_live_", "k_test_"),
        r"[sr]k_(?:live|test)_(?<![A-Za-z0-9_][sr]k_live_)(?<![A-Za-z0-9_][sr]k_test_)"
        r"[A-Za-z0-9]{16,250}",
        _CASED,
        "",
    ),
    ("stripe-key", ("whsec_",), r"whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{24,100}", _CASED, ""),
    ("google-api-key", ("AIza",), r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}", _CASED, ""),
    (
        "google-oauth-token",
        ("ya29.",),
        r"ya29\.(?<![\w.-]ya29\.)[A-Za-z0-9_-]{20,2000}",
        _CASED,
        "",
    ),
    (
        "google-client-secret",
        ("GOCSPX-",),
        r"GOCSPX-(?<![\w-]GOCSPX-)[A-Za-z0-9_-]{24,64}",
        _CASED,
        "",
    ),
    ("google-refresh-token", ("1//",), r"1//(?<![\w/:.-]1//)0[A-Za-z0-9_-]{30,500}", _CASED, ""),
    *_rows(
        "azure-storage-key",
        ("accountkey", "sharedaccesskey"),
        r"\s{0,5}=\s{0,5}(?P<secret>[a-z0-9+/]{30,120}={0,2})",
        _FOLDED,
        _LETTERS,
    ),
    (
        "azure-sas-signature",
        ("sig=",),
        r"sig=(?<=[?&;\s\"']sig=)(?P<secret>[A-Za-z0-9%+/]{20,200}(?:%3D|%3d|=){0,2})",
        _CASED,
        "",
    ),
    ("azure-ad-secret", ("Q~",), r"Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", _CASED, ""),
    (
        "sendgrid-key",
        ("SG.",),
        r"SG\.(?<![\w.-]SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",
        _CASED,
        "",
    ),
    ("twilio-key", ("SK",), r"SK(?<![A-Za-z0-9]SK)[0-9a-f]{32}(?![A-Za-z0-9])", _CASED, ""),
    ("mailgun-key", ("key-",), r"key-(?<![\w-]key-)[0-9a-f]{32}(?![A-Za-z0-9])", _CASED, ""),
    ("mailchimp-key", ("-us",), r"-us\d{1,2}(?![A-Za-z0-9])", _CASED, ""),
    (
        "shopify-token",
        ("shp",),
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
        _CASED,
        _WORDY,
    ),
    ("digitalocean-token", ("_v1_",), r"do[opr]_v1_[a-f0-9]{64}", _CASED, _WORDY),
    ("databricks-token", ("dapi",), r"dapi(?<![\w-]dapi)[a-f0-9]{32}(?:-\d)?", _CASED, ""),
    ("telegram-bot-token", (":AA",), r":AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _CASED, ""),
    (
        "vault-token",
        ("hv",),
        r"hv[sbr]\.(?<![\w.-]hv[sbr]\.)[A-Za-z0-9_-]{24,300}",
        _CASED,
        "",
    ),
    ("terraform-token", (".atlasv1.",), r"\.atlasv1\.[A-Za-z0-9_=-]{60,70}", _CASED, ""),
    ("age-secret-key", ("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}", _CASED, ""),
    ("groq-key", ("gsk_",), r"gsk_(?<![\w-]gsk_)[A-Za-z0-9]{48,56}", _CASED, ""),
    ("replicate-token", ("r8_",), r"r8_(?<![\w-]r8_)[A-Za-z0-9]{37,40}", _CASED, ""),
    ("perplexity-key", ("pplx-",), r"pplx-(?<![\w-]pplx-)[A-Za-z0-9]{40,56}", _CASED, ""),
    ("xai-key", ("xai-",), r"xai-(?<![\w-]xai-)[A-Za-z0-9]{70,90}", _CASED, ""),
    ("newrelic-key", ("NRAK-",), r"NRAK-(?<![\w-]NRAK-)[A-Z0-9]{27}", _CASED, ""),
    ("sentry-token", ("sntry",), r"sntry[su]_[A-Za-z0-9+/=_]{40,400}", _CASED, _WORDY),
    ("atlassian-token", ("ATATT3",), r"ATATT3[A-Za-z0-9_=-]{150,300}", _CASED, _WORDY),
    ("bitbucket-token", ("ATBB",), r"ATBB(?<![\w-]ATBB)[A-Za-z0-9_=.-]{28,40}", _CASED, ""),
    ("docker-hub-token", ("dckr_pat_",), r"dckr_pat_[A-Za-z0-9_-]{27,40}", _CASED, _WORDY),
    ("postman-key", ("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", _CASED, _WORDY),
    ("linear-key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}", _CASED, _WORDY),
    ("notion-token", ("ntn_",), r"ntn_(?<![\w-]ntn_)[A-Za-z0-9]{40,50}", _CASED, ""),
    (
        "grafana-token",
        ("gl",),
        r"gl(?:c|sa)_[A-Za-z0-9+/_]{32,400}={0,2}",
        _CASED,
        _WORDY,
    ),
    (
        "square-token",
        ("sq0",),
        r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}",
        _CASED,
        _WORDY,
    ),
    (
        "doppler-token",
        ("dp.",),
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",
        _CASED,
        _WORDY,
    ),
    ("pulumi-token", ("pul-",), r"pul-(?<![\w-]pul-)[a-f0-9]{40}", _CASED, ""),
    ("supabase-token", ("sbp_",), r"sbp_(?<![\w-]sbp_)[a-f0-9]{40}", _CASED, ""),
    ("alibaba-key", ("LTAI",), r"LTAI(?<![\w-]LTAI)[A-Za-z0-9]{20}(?![A-Za-z0-9])", _CASED, ""),
    ("heroku-key", ("HRKU-",), r"HRKU-(?<![\w-]HRKU-)[A-Za-z0-9_-]{60}", _CASED, ""),
    (
        "huggingface-token",
        ("hf_",),
        r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,40}(?![A-Za-z0-9])",
        _CASED,
        "",
    ),
    (
        "npm-token",
        ("npm_",),
        r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        _CASED,
        "",
    ),
    ("pypi-token", ("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_-]{50,1000}", _CASED, ""),
    (
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"A(?:KIA|SIA|BIA|CCA)(?<![A-Za-z0-9]A[A-Z]{3})[A-Z0-9]{16}(?![A-Za-z0-9])",
        _CASED,
        "",
    ),
    (
        "aws-secret-key",
        ("aws",),
        r"aws[\w.-]{0,30}?secret[\w.-]{0,30}?[\"']?\s{0,5}[:=]{1,2}\s{0,5}[\"']?"
        r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])",
        _FOLDED,
        _LETTERS,
    ),
    (
        # A JWT's header is a JSON object: `{"` (eyJ), `{ "` (eyA), `{` and a line break or
        # tab (ewo, ew0, ewk); the payload need not be JSON; a JWE has five parts.
        "jwt",
        ("eyJ", "eyA", "ewo", "ew0", "ewk"),
        r"e(?:yJ|yA|wo|w0|wk)(?<![A-Za-z0-9_-]...)[A-Za-z0-9_-]{8,2000}={0,2}\."
        r"[A-Za-z0-9_-]{0,8000}={0,2}\.[A-Za-z0-9_-]{0,8000}={0,2}"
        r"(?:\.[A-Za-z0-9_-]{0,8000}\.[A-Za-z0-9_-]{0,2000})?",
        _CASED,
        "",
    ),
    (
        "bearer-token",
        ("bearer",),
        r"bearer {1,5}(?P<secret>[a-z0-9._~+/-]{20,2000}={0,2})",
        _FOLDED,
        _LETTERS,
    ),
    (
        "basic-auth",
        ("authorization",),
        r"authorization[\"']?\s{0,5}[:=]\s{0,5}[\"']?basic {1,5}"
        r"(?P<secret>[a-z0-9+/]{12,1000}={0,2})(?![\w+/=])",
        _FOLDED,
        _LETTERS,
    ),
    (
        # A container registry's config.json: "auth" is base64 of user:password.
        "basic-auth",
        ('"auth"',),
        r"\"auth\"\s{0,5}:\s{0,5}\"(?P<secret>[a-z0-9+/]{8,1000}={0,2})\"",
        _FOLDED,
        "",
    ),
    (
        "url-credentials",
        ("://",),
        r"://[^\s/:@'\"<>]{0,100}:(?P<secret>[^\s/@'\"<>]{1,200})@(?=[\w\[])",
        _CASED,
        "",
    ),
    (
        # `curl -u user:password` (the command named before it on the line, _CONTEXT).
        "password",
        ("-u",),
        _CURL_USER,
        _CASED,
        "",
    ),
    (
        # `--user user:password`, whatever the command.
        "password",
        ("--user",),
        r"--user[ =][\"']?[^\s:\"'-][^\s:\"']{0,99}:(?P<secret>[^\s\"'@]{1,200})",
        _FOLDED,
        "",
    ),
    (
        # mysql's `-pSECRET` (glued: `-p SECRET` prompts and names a database).
        "password",
        ("-p",),
        _MYSQL_PASSWORD,
        _CASED,
        "",
    ),
    (
        # `sshpass -p SECRET`, `docker login -p SECRET`, `redis-cli -a SECRET`.
        "password",
        ("-p", "-a"),
        _LOGIN_PASSWORD,
        _CASED,
        "",
    ),
    (
        # `--password SECRET` (the `=` form is an assignment, below); not --password-stdin.
        "password",
        ("--password",),
        r"--password(?![\w-]) {1,5}(?P<secret>[^\s-][^\s]{0,199})",
        _FOLDED,
        "",
    ),
    (
        # ~/.netrc: `machine HOST login USER password SECRET`, on one line or several.
        "password",
        ("machine",),
        r"machine\s{1,20}\S{1,200}\s{1,20}(?:login\s{1,20}\S{1,200}\s{1,20})?"
        r"password\s{1,20}(?P<secret>\S{1,200})",
        _FOLDED,
        _LETTERS,
    ),
    (
        "password",
        ("default",),
        r"default\s{1,20}login\s{1,20}\S{1,200}\s{1,20}password\s{1,20}(?P<secret>\S{1,200})",
        _FOLDED,
        _LETTERS,
    ),
    *_rows(
        # SQL: IDENTIFIED BY 'x', [WITH] PASSWORD 'x'.
        "password",
        ("identified by", "password"),
        r"\s{1,5}(?P<secret>'[^'\n]{1,200}'|\"[^\"\n]{1,200}\")",
        _FOLDED,
        _LETTERS,
    ),
    *_rows(
        # redis.conf
        "password",
        ("requirepass", "masterauth"),
        r"[ \t]{1,5}(?P<secret>[^\s\"'][^\s]{0,199})",
        _FOLDED,
        _LETTERS,
    ),
    (
        # PowerShell: ConvertTo-SecureString "SECRET" -AsPlainText.
        "password",
        ("convertto-securestring",),
        r"convertto-securestring\s{1,5}(?:-string\s{1,5})?(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}')",
        _FOLDED,
        "",
    ),
    (
        # Prose: "the password is X", "パスワードは X" (a value that looks made up, below).
        "password",
        ("pass",),
        r"pass(?:word|phrase) (?:is|was)[ \t]{0,3}[\"'`]?(?P<prose>[!-~]{6,200})",
        _FOLDED,
        _LETTERS,
    ),
    (
        "password",
        ("パスワード",),
        r"パスワード(?:は|:|：)[ \t　]{0,3}[「\"'`]?(?P<prose>[!-~]{6,200})",
        _FOLDED,
        _LETTERS,
    ),
    (
        # An assignment to a name ending in password: `password=`, `PGPASSWORD=`,
        # `db_password:`, `"dbPassword": `; the name may be glued to letters.
        "password",
        ("pass",),
        r"pass(?:word|wd|phrase)s?[\"']?\s{0,5}(?::|=|:=)\s{0,5}(?P<secret>\"[^\"\n]{1,200}\"|"
        r"'[^'\n]{1,200}'|[^\s\"'`<>()\[\]{},;=][^\s\"'`<>()\[\]{},;]{0,199})",
        _FOLDED,
        "",
    ),
    (
        # ODBC and MySQL's `PWD=` (not a shell's `PWD=/home/...`).
        "password",
        ("pwd",),
        r"pwd\s{0,5}=\s{0,5}(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`<>()\[\]{},;=/~.$]"
        r"[^\s\"'`<>()\[\]{},;]{0,199})",
        _FOLDED,
        _LETTERS,
    ),
    (
        "password",
        ("secret", "token", "key", "cred"),
        r"(?:secret|token|api[_-]?key|apikey|access[_-]?key|"
        r"secret[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)"
        r"[\"']?\s{0,5}(?::|=|:=)\s{0,5}(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|"
        r"[^\s\"'`<>()\[\]{},;=][^\s\"'`<>()\[\]{},;]{0,199})",
        _FOLDED,
        _LETTERS,
    ),
)
# Keys whose distinctive literal sits in their middle: the pattern starts at the literal
# (fast) and the characters before it are taken by this look-back (the match is no key
# without them).
_LEADS = {
    "azure-ad-secret": r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\d\Z",
    "mailchimp-key": r"(?<![A-Za-z0-9])[0-9a-f]{32}\Z",
    "telegram-bot-token": r"(?<![0-9])[0-9]{8,10}\Z",
    "terraform-token": r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\Z",
}
PRIVATE_KEY = "private-key"
_ORDER = {kind: i for i, (kind, *_) in reversed(list(enumerate(PATTERNS)))}
_ORDER[PRIVATE_KEY] = -1

_compiled: dict[str, re.Pattern[str]] = {}
_CASED_ANCHORS = frozenset(
    a for _, anchors, _, folded, _ in PATTERNS if not folded for a in anchors
)
_FOLDED_ANCHORS = frozenset(a for _, anchors, _, folded, _ in PATTERNS if folded for a in anchors)

# Values of an assignment that are code or placeholders, not secrets: `token: string`,
# `password = None`, `secret: ${SECRET}`, `password=$PGPASS`, `%(password)s`,
# `api_key=os.environ[...]`. A variable is written in one case (`$HOME`, `@password`), so a
# value such as `$ecretPa55` or `@dm1n!` is a secret that starts with a sigil.
_NOT_A_VALUE = (
    r"(?i)(?:str|string|int|bool|boolean|number|bytes|any|none|null|nil|undefined|true|"
    r"false|optional|secretstr|required|\*+|x+|\.+|<[^>]*>|redacted|hidden|changeme)\Z|"
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z|\[redacted:|"
    r"\$\{|\$\(|#\{|\{\{|%\{|%\(|<%|%[A-Za-z_]\w*%\Z|%[sdr]\Z|\{[A-Za-z_]\w*\}\Z|"
    r"[$@](?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\Z"
)

_IDENTIFIER = r"[A-Za-z_]\w*\Z"
_SNAKE_CASE = r"[a-z]+(?:_[a-z]+)+\Z"
_KEY_WORD = r"(?i)pass|secret|token|key|cred"

_KEY_HEADER = r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
_KEY_END = r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
_KEY_BODY = r"[A-Za-z0-9+/=\s\\:,.-]{0,65536}"
MAX_KEY_CHARS = 65536  # a 16384-bit RSA key in PEM is ~12 KB

# What a key is still a key across (the joined view below): a line break between two key
# characters, with a `\` continuation before it and indentation or one blank line after it
# (a key wrapped by an editor, a terminal or a line-length limit; two blocks of one answer),
# when the next line goes on with what looks like more of a key: 8 key characters holding a
# digit, a symbol or a capital past the first letter, not a word ("Then", "kubernetes") nor
# a `-----` line.
_LINE_JOIN = (
    r"\n[ \t]*(?:\r?\n[ \t]*)?(?=[A-Za-z0-9+/=_-]{8})(?=[A-Za-z]?[a-z]*[A-Z0-9+/=_-])(?!--)"
)
_KEY_CHARS = frozenset(_LETTERS + "0123456789+/_-")
_PERCENT = r"%[0-9A-Fa-f]{2}"
# Runs of base64 long enough to hold a key (a key's 20-odd characters encode to 28 or more),
# in both cases of letters (hex digests and snake_case names are not base64 of text).
_BASE64_RUN = r"[A-Za-z0-9+/_-]{24,8000}={0,2}"
MAX_DECODE_DEPTH = 2
# How far around each edit of the joined view it is searched again: more than the longest
# key a pattern takes across a break (a JWT's parts), far less than a long transcript.
VIEW_WINDOW = 8192

Span = tuple[int, int, str]  # start, end, kind


def redact(text: str, keep_lines: bool = False) -> str:
    """`text` with every secret shape replaced by `[redacted:KIND]`; with `keep_lines`, the
    line breaks of a secret (a key block, a wrapped key) follow its marker, so line numbers
    into the text stay true."""
    return _redact_all(text, keep_lines)[0]


def find_secrets(text: str) -> list[str]:
    """The kinds of secret `text` holds, in table order (empty when there are none)."""
    return _redact_all(text)[1]


def _redact_all(text: str, keep_lines: bool = False) -> tuple[str, list[str]]:
    """Passes until nothing changes: a marker can end the word a key was glued to
    (`AIza…sk-…`: the `sk-` key starts a word only once the Google key before it is gone)."""
    kinds: list[str] = []
    for _ in range(4):
        spans = _merge(_find(text, 0))
        if not spans:
            break
        for _, _, kind in sorted(spans, key=lambda s: _ORDER[s[2]]):
            if kind not in kinds:
                kinds.append(kind)
        out: list[str] = []
        pos = 0
        for start, end, kind in spans:
            breaks = "\n" * text.count("\n", start, end) if keep_lines else ""
            out.append(text[pos:start] + MARKER.format(kind) + breaks)
            pos = end
        out.append(text[pos:])
        text = "".join(out)
    kinds.sort(key=lambda kind: _ORDER[kind])
    return text, kinds


def _merge(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one, named by the kind of the earliest table row among them."""
    merged: list[Span] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], _ORDER[s[2]])):
        if merged and start < merged[-1][1]:
            last_start, last_end, last_kind = merged[-1]
            better = kind if _ORDER[kind] < _ORDER[last_kind] else last_kind
            merged[-1] = (last_start, max(last_end, end), better)
        else:
            merged.append((start, end, kind))
    return merged


def _find(text: str, depth: int) -> list[Span]:
    """Secrets in `text` as it is, and in its joined view: format characters removed, line
    breaks inside keys closed, %XX decoded (spans mapped back to `text`)."""
    spans = _detect(text, depth)
    view = _View.joined(text)
    if view is not None:
        for low, high in view.windows(VIEW_WINDOW):
            for start, end, kind in _detect(view.text[low:high], depth):
                spans.append((*view.original(low + start, low + end), kind))
    return spans


def _detect(text: str, depth: int) -> list[Span]:
    spans = _private_key_spans(text) + _pattern_spans(text)
    if depth < MAX_DECODE_DEPTH:
        spans += _encoded_spans(text, spans, depth)
    return spans


def _pattern_spans(text: str) -> list[Span]:
    lowered = text.lower()
    # Which anchors occur, in one pass per anchor: most text holds none, and then no pattern
    # runs.
    present = {a for a in _CASED_ANCHORS if a in text}
    present.update(a for a in _FOLDED_ANCHORS if a in lowered)
    if not present:
        return []
    spans: list[Span] = []
    for kind, anchors, pattern, folded, not_after in PATTERNS:
        if present.isdisjoint(anchors):
            continue
        haystack = lowered if folded else text
        if len(haystack) != len(text):  # a rare character lower-cases to two: match `text`
            regex, haystack = _compile(pattern, re.IGNORECASE), text
        else:
            regex = _compile(pattern, 0)
        for match in regex.finditer(haystack):
            span = _secret_span(text, match, kind, not_after)
            if span is not None:
                spans.append((span[0], span[1], kind))
    return spans


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    key = f"{flags}:{pattern}"
    if key not in _compiled:
        _compiled[key] = re.compile(pattern, flags)
    return _compiled[key]


def _secret_span(
    text: str, match: re.Match[str], kind: str, not_after: str
) -> tuple[int, int] | None:
    """Where the secret of a match lies in `text`, or None when the match is no secret."""
    start, end = match.span()
    if start and text[start - 1] in not_after:
        return None
    context = _CONTEXT.get(match.re.pattern)
    if context is not None:
        floor = max(0, start - 300)
        line_start = max(text.rfind("\n", floor, start) + 1, floor)
        if not _compile(context, 0).search(text, line_start, start):
            return None
    lead = _LEADS.get(kind)
    if lead is not None:
        before = _compile(lead, 0).search(text, max(0, start - 40), start)
        if before is None:
            return None
        start = before.start()
    groups = match.re.groupindex
    if not groups:
        return start, end
    name = next(g for g in ("secret", "secret2", "prose") if g in groups and match.group(g))
    value_start, value_end = match.span(name)
    value = text[value_start:value_end]
    if name == "prose":
        value = value.rstrip(".,;:!?)」\"'`")
        if value.startswith("[redacted:"):
            return None
        return (value_start, value_start + len(value)) if _looks_made_up(value) else None
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
    return value_start + len(quote), value_end - len(quote)


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


def _looks_made_up(value: str) -> bool:
    """A password written in prose, not a word: six characters or more, with a digit or with
    three of lower case, inner capitals and symbols ("long-lived" and "required." are words)."""
    if len(value) < 6 or value.startswith("http"):
        return False
    if any(c.isdigit() for c in value):
        return True
    classes = (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value[1:])
        + any(not c.isalnum() for c in value)
    )
    return classes >= 3


class _View:
    """`text` after edits, able to map a span of the edited text back to the original."""

    def __init__(self, text: str, edits: list[tuple[int, int, str]]) -> None:
        parts: list[str] = []
        self._view_starts: list[int] = []
        self._edits: list[tuple[int, int, int, int]] = []  # view start, view end, orig s, e
        pos = view_pos = 0
        for start, end, replacement in edits:
            parts.append(text[pos:start])
            view_pos += start - pos
            self._view_starts.append(view_pos)
            self._edits.append((view_pos, view_pos + len(replacement), start, end))
            parts.append(replacement)
            view_pos += len(replacement)
            pos = end
        parts.append(text[pos:])
        self.text = "".join(parts)

    @classmethod
    def joined(cls, text: str) -> _View | None:
        edits: list[tuple[int, int, str]] = []
        if "\n" in text:
            for match in _compile(_LINE_JOIN, 0).finditer(text):
                start = match.start()
                start -= text[start - 1 : start] == "\r"
                start -= text[start - 1 : start] == "\\"
                if text[start - 1 : start] in _KEY_CHARS and start > 0:
                    edits.append((start, match.end(), ""))
        if "%" in text:
            for match in _compile(_PERCENT, 0).finditer(text):
                decoded = chr(int(match.group()[1:], 16))
                if " " <= decoded <= "~":
                    edits.append((match.start(), match.end(), decoded))
        if not text.isascii() and _ANY_FORMAT.search(text):
            edits += [(m.start(), m.end(), "") for m in _FORMAT.finditer(text)]
        edits.sort()
        return cls(text, edits) if edits else None

    def windows(self, radius: int) -> list[tuple[int, int]]:
        """The stretches of the view within `radius` of an edit, merged, each starting and
        ending at a space or line break (a window must not cut a word into a key's start)."""
        text = self.text
        out: list[tuple[int, int]] = []
        for view_start, view_end, _, _ in self._edits:
            low, high = max(0, view_start - radius), min(len(text), view_end + radius)
            if out and low <= out[-1][1]:
                out[-1] = (out[-1][0], high)
            else:
                out.append((low, high))
        return [(_word_start(text, low), _word_end(text, high)) for low, high in out]

    def original(self, start: int, end: int) -> tuple[int, int]:
        return self._map(start, is_end=False), self._map(end, is_end=True)

    def _map(self, pos: int, is_end: bool) -> int:
        index = (bisect_left if is_end else bisect_right)(self._view_starts, pos) - 1
        if index < 0:
            return pos
        view_start, view_end, orig_start, orig_end = self._edits[index]
        if pos < view_end:
            return orig_end if is_end else orig_start
        return orig_end + (pos - view_end)


def _word_start(text: str, pos: int) -> int:
    """`pos`, or the next whitespace after it (within 200 characters)."""
    if pos == 0:
        return 0
    found = _compile(r"\s", 0).search(text, pos, pos + 200)
    return found.start() if found else pos


def _word_end(text: str, pos: int) -> int:
    """`pos`, or the last whitespace before it (within 200 characters)."""
    if pos >= len(text):
        return len(text)
    cut = max(text.rfind(c, max(0, pos - 200), pos) for c in " \n\t")
    return cut if cut > 0 else pos


def _encoded_spans(text: str, found: list[Span], depth: int) -> list[Span]:
    """Runs of base64 whose decoded text holds a secret (`echo -n KEY | base64`, a
    Kubernetes Secret's data, a config's `auth`): the whole run is the secret."""
    spans: list[Span] = []
    for match in _compile(_BASE64_RUN, 0).finditer(text):
        start, end = match.span()
        run = match.group()
        if run.islower() or run.isupper() or any(s < end and start < e for s, e, _ in found):
            continue
        decoded = _decode_base64(run)
        if decoded is None:
            continue
        inner = _find(decoded, depth + 1)
        if inner:
            kind = min((k for _, _, k in inner), key=lambda k: _ORDER[k])
            spans.append((start, end, kind))
    return spans


def _decode_base64(run: str) -> str | None:
    """`run` decoded (standard or URL-safe alphabet), when it decodes to printable text."""
    import base64
    import binascii

    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    return decoded if printable >= 0.95 * len(decoded) else None


def _private_key_spans(text: str) -> list[Span]:
    """PEM and OpenSSH private-key blocks, BEGIN through END, or through the end of the key's
    characters when the END line is missing (a key cut off in a pasted log or a snippet); an
    END line without its BEGIN takes the key characters before it."""
    if "PRIVATE KEY" not in text:
        return []
    spans: list[Span] = []
    pos = 0
    ends = [m.span() for m in _compile(_KEY_END, 0).finditer(text)]
    next_end = 0  # index into ends: the first END at or after the current position
    for begin in _compile(_KEY_HEADER, 0).finditer(text):
        if begin.start() < pos:
            continue  # inside a block already found
        while next_end < len(ends) and ends[next_end][0] < begin.end():
            end_start, end_stop = ends[next_end]
            if end_start >= pos:  # an END with no BEGIN: the key characters before it
                spans.append((_body_start(text, pos, end_start), end_stop, PRIVATE_KEY))
                pos = end_stop
            next_end += 1
        if next_end < len(ends) and ends[next_end][0] - begin.end() <= MAX_KEY_CHARS:
            stop = ends[next_end][1]
            next_end += 1
        else:
            body = _compile(_KEY_BODY, 0).match(text, begin.end())
            stop = body.end() if body else begin.end()
        spans.append((begin.start(), stop, PRIVATE_KEY))
        pos = stop
    for end_start, end_stop in ends[next_end:]:
        if end_start >= pos:
            spans.append((_body_start(text, pos, end_start), end_stop, PRIVATE_KEY))
            pos = end_stop
    return spans


def _body_start(text: str, floor: int, end: int) -> int:
    """Where the key characters that run up to `end` begin (not before `floor`)."""
    start = max(floor, end - MAX_KEY_CHARS)
    body = text[start:end]
    keep = len(
        body.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n\r\\")
    )
    return start + keep
