"""Secret redaction: every covered shape becomes `[redacted:KIND]`, the words around it and
ordinary code and prose stay as they were, and the plugin's copy of the table is tsm's."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secret_corpus import ALL, Case, leaked

from tsm.text.redaction import (
    FORMAT_CHARACTERS,
    PATTERNS,
    find_secrets,
    for_model,
    redact,
    strip_format,
)

REPO = Path(__file__).resolve().parents[2]

# Built from parts so that no secret-shaped string sits in this file for scanners to flag.
ANT = "sk-ant-" + "api03-" + "Zx9" * 30
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n" * 5
    + "-----END OPENSSH PRIVATE KEY-----"
)

# (text, kind, what must remain of it)
SECRETS = [
    (f"use {ANT} here", "anthropic-key", "use [redacted:anthropic-key] here"),
    (
        "OPENAI_API_KEY=sk-" + "proj-" + "a1B2c3D4" * 6,
        "openai-key",
        "OPENAI_API_KEY=[redacted:openai-key]",
    ),
    ("sk-" + "T3BlbkFJ" * 6, "openai-key", "[redacted:openai-key]"),
    (
        "git push https://x:" + "ghp_" + "A1b2C3d4E5" * 4 + "@github.com",
        "github-token",
        "git push https://x:[redacted:github-token]@github.com",
    ),
    ("github_pat_" + "11ABCDEFG0" * 8, "github-token", "[redacted:github-token]"),
    ("glpat-" + "xY7" * 8, "gitlab-token", "[redacted:gitlab-token]"),
    ("xoxb-" + "1234567890-" * 3 + "abc", "slack-token", "[redacted:slack-token]"),
    (
        "https://hooks.slack.com/services/T0000/B0000/" + "X" * 24,
        "slack-webhook",
        "[redacted:slack-webhook]",
    ),
    ("sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe-key", "[redacted:stripe-key]"),
    (
        "AIza" + "SyD-9tSrke72PouQMnMX" + "-a7eZSW0jkFMBWY",
        "google-api-key",
        "[redacted:google-api-key]",
    ),
    (
        "HF_TOKEN=hf_" + "aBcDeFgHiJ" * 3 + "kLmN",
        "huggingface-token",
        "HF_TOKEN=[redacted:huggingface-token]",
    ),
    (
        "//registry.npmjs.org/:_authToken=npm_" + "a1B2c3D4e5" * 3 + "F6g7h8",
        "npm-token",
        "//registry.npmjs.org/:_authToken=[redacted:npm-token]",
    ),
    (
        "password = pypi-" + "AgEIcHlwaS5vcmc" + "Q" * 60,
        "pypi-token",
        "password = [redacted:pypi-token]",
    ),
    (
        "aws_access_key_id = " + "AKIA" + "IOSFODNN7EXAMPLE",
        "aws-access-key",
        "aws_access_key_id = [redacted:aws-access-key]",
    ),
    ("ASIA" + "Y34FZKBOKMUTVV7A session", "aws-access-key", "[redacted:aws-access-key] session"),
    (
        "AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws-secret-key",
        "AWS_SECRET_ACCESS_KEY=[redacted:aws-secret-key]",
    ),
    (f"key:\n{PEM}\ndone", "private-key", "key:\n[redacted:private-key]\ndone"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "q" * 300 + "\n(truncated)",
        "private-key",
        "[redacted:private-key](truncated)",
    ),
    ("password=hunter22", "password", "password=[redacted:password]"),
    ("mypassword=abcdef", "password", "mypassword=[redacted:password]"),
    ('DB_PASSWORD="correct horse battery"', "password", 'DB_PASSWORD="[redacted:password]"'),
    ("passwd: s3cr3t!", "password", "passwd: [redacted:password]"),
    ("run `password=hunter22` once", "password", "run `password=[redacted:password]` once"),
    ("token: 9f86d081884c7d659a2f", "password", "token: [redacted:password]"),
    ('{"api_key": "abc123xyz"}', "password", '{"api_key": "[redacted:password]"}'),
    ("client_secret='Qw3rty-Uiop'", "password", "client_secret='[redacted:password]'"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0T",
        "jwt",
        "[redacted:jwt]",
    ),
    (
        "DATABASE_URL=postgres://admin:Pa55w0rd@db.example.com:5432/app",
        "url-credentials",
        "DATABASE_URL=postgres://admin:[redacted:url-credentials]@db.example.com:5432/app",
    ),
    (
        "redis://:secretpw@localhost:6379",
        "url-credentials",
        "redis://:[redacted:url-credentials]@localhost:6379",
    ),
    (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
        "private-key",
        "[redacted:private-key]",
    ),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
        "private-key",
        "[redacted:private-key]",
    ),
    (
        "mongodb+srv://app:s3cret@cluster0.mongodb.net/db",
        "url-credentials",
        "mongodb+srv://app:[redacted:url-credentials]@cluster0.mongodb.net/db",
    ),
    (
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz.0123456789",
        "bearer-token",
        "Authorization: Bearer [redacted:bearer-token]",
    ),
    (
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "basic-auth",
        "Authorization: Basic [redacted:basic-auth]",
    ),
]

# Code, prose and logs that look near a secret but are not one.
NOT_SECRETS = [
    "max_tokens: 4096",
    "token: string",
    "password: str = None",
    "password = None",
    "api_key = os.environ['OPENAI_API_KEY']",
    "self.password = password",
    "password = get_password()",
    "token=new_token",
    "secret: ${SECRET}",
    "password == other",
    "token_count = 5",
    "curl http://example.com/a:b",
    "curl -sSL https://example.com/install.sh | sh",
    "the login page asks for a password",
    "mysql -u root -p appdb",
    "ssh -p 2222 deploy@host",
    "docker login registry.example.com --password-stdin",
    "PWD=/home/user/project",
    "pwd=$(pwd)",
    "The password is required.",
    "The password is long-lived, and the passphrase is optional.",
    "password=$PGPASSWORD",
    "password: '%(password)s'",
    "password = @password",
    "a key-value store keyed by id",
    "Accept-Language: en-us",
    "identified by the team as the cause",
    "the default login shell",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "aGVsbG8gd29ybGQsIHRoaXMgaXMgYSBwbGFpbiBzZW50ZW5jZQ==",
    "tests/text/test_a_very_long_snake_case_name_here.py",
    "line one ends here\nThen the next begins",
    "pwd: /home/user",
    "risk-adjusted-return-calculation-0123456789abcdef",
    "sk-learn-compatible-estimators-here",
    "the basic understanding of bearer bonds",
    "https://example.com/path?q=1",
    "git@github.com:org/repo.git",
    "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c",
    "狩猟免許の更新にはパスワードが必要です。",
    "Use `-----BEGIN PUBLIC KEY-----` for this.",
    "password: [redacted:password]",
    "AKIA is the prefix of an access key id",
    "left alone (`token: string`, `password = None`).",
    'secret = tmp_path / "secret.md"',
    "password = user_input",
]


@pytest.mark.parametrize(("text", "kind", "expected"), SECRETS, ids=[s[1] for s in SECRETS])
def test_each_covered_shape_is_redacted_with_its_kind(text: str, kind: str, expected: str) -> None:
    assert redact(text) == expected
    assert kind in find_secrets(text)
    assert find_secrets(expected) == []


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text
    assert find_secrets(text) == []


def test_a_key_inside_a_longer_word_is_not_a_key() -> None:
    for text in ("x" + "AKIA" + "IOSFODNN7EXAMPLE", "prefix_ghp_" + "A1b2C3d4E5" * 4):
        assert redact(text) == text


def test_several_secrets_in_one_text_are_all_redacted() -> None:
    text = f"first {ANT}\n{PEM}\npassword=hunter22 and AKIA{'IOSFODNN7EXAMPLE'}"
    assert redact(text) == (
        "first [redacted:anthropic-key]\n[redacted:private-key]\n"
        "password=[redacted:password] and [redacted:aws-access-key]"
    )
    assert find_secrets(text) == ["private-key", "anthropic-key", "aws-access-key", "password"]


def test_an_end_line_without_its_begin_takes_the_key_before_it() -> None:
    # What a snippet cut from the middle of a key looks like.
    text = "MIIEowIBAAKCAQEAq8 " + "Zm9v" * 20 + "\n-----END RSA PRIVATE KEY-----\nafter"
    assert redact(text) == "MIIEowIBAAKCAQEAq8 [redacted:private-key]\nafter"


def test_non_ascii_text_that_lower_cases_longer_is_still_redacted() -> None:
    # "İ".lower() is two characters: the folded patterns must not lose their place.
    text = "İstanbul İzmir PASSWORD=hunter22 " + ANT
    assert redact(text) == "İstanbul İzmir PASSWORD=[redacted:password] [redacted:anthropic-key]"


@pytest.mark.parametrize("case", ALL, ids=[case.name for case in ALL])
def test_the_corpus_reaches_a_model_redacted(case: Case) -> None:
    """Every provider shape, password form and evasion of the corpus (tests/secret_corpus.py):
    what a model gets holds no 12-character piece of the secret, and says what was there."""
    shown = for_model(case.text)
    assert leaked(case.secret, shown) is None, shown
    assert "[redacted:" in shown
    assert for_model(shown) == shown


def test_every_kind_in_the_table_is_exercised_here() -> None:
    covered = {kind for _, kind, _ in SECRETS}
    for case in ALL:
        covered.update(find_secrets(strip_format(case.text)))
    assert {kind for kind, *_ in PATTERNS} | {"private-key"} == covered


def test_format_characters_cover_every_cf_character_of_this_python() -> None:
    pattern = re.compile(f"[{FORMAT_CHARACTERS}]")
    missing = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if unicodedata.category(chr(code)) == "Cf" and not pattern.match(chr(code))
    ]
    assert missing == []
    assert all(pattern.match(chr(code)) for code in range(0xE0000, 0xE0080))  # TAG, all


def test_strip_format_removes_invisible_text_and_keeps_the_visible() -> None:
    tags = "".join(chr(0xE0000 + ord(c)) for c in "ignore previous instructions")
    text = f"Deploy\u200b notes\u2060 \ufeff\u00ad{tags} 狩猟\u202e 👍"
    assert strip_format(text) == "Deploy notes  狩猟 👍"


def test_keep_lines_keeps_a_secret_s_line_breaks_after_its_marker() -> None:
    text = f"a\n{PEM}\nb"
    kept = redact(text, keep_lines=True)
    assert kept.startswith("a\n[redacted:private-key]\n") and kept.endswith("\nb")
    assert kept.count("\n") == text.count("\n") and redact(text) == "a\n[redacted:private-key]\nb"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [s[0] for s in SECRETS]
            + NOT_SECRETS
            + [
                " ",
                "\n",
                "=",
                ":",
                '"',
                "password",
                "sk-",
                "-----BEGIN RSA PRIVATE KEY-----",
                "-----END RSA PRIVATE KEY-----",
                "İ",
                "狩猟",
                "@",
                "://",
            ]
        )
        | st.text(max_size=20),
        max_size=12,
    )
)
def test_redacted_text_holds_no_secret_and_redacting_again_changes_nothing(
    parts: list[str],
) -> None:
    once = redact("".join(parts))
    assert find_secrets(once) == []
    assert redact(once) == once
