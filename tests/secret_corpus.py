"""The redaction corpus: synthetic secrets of every shape tsm must keep from a model, each in
the text a person would write it in, and what must not survive (the secret itself).

The keys are made here from a seeded generator, of the right alphabet and length, so no
real key and no secret-shaped literal sits in the repository for scanners to flag. Used by
tests/text/test_redaction.py, the hook and MCP tests, and bench/secret_redaction.py.
"""

from __future__ import annotations

import base64
import random
import string
from typing import NamedTuple

_rng = random.Random(20261129)
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
BASE64 = ALNUM + "+/"


def chars(alphabet: str, n: int) -> str:
    """`n` random characters of `alphabet`, with a digit and a letter (as real keys have)."""
    while True:
        out = "".join(_rng.choice(alphabet) for _ in range(n))
        if n < 4 or (any(c.isdigit() for c in out) and any(c.isalpha() for c in out)):
            return out


class Case(NamedTuple):
    name: str
    text: str
    secret: str  # what must not reach a model, whole or in any 12-character piece


def P(*parts: str) -> str:  # noqa: N802 - joins the pieces a key is written in
    return "".join(parts)


ANT = P("sk-", "ant-api03-", chars(URLSAFE, 93), "AA")
GHP = P("gh", "p_", chars(ALNUM, 36))
AKIA = P("AK", "IA", chars(string.ascii_uppercase + string.digits, 16))
PASSWORD = "Xk9" + chars(ALNUM, 7) + "!q"

PROVIDERS: list[Case] = [
    Case("anthropic", f"ANTHROPIC_API_KEY={ANT}", ANT),
    Case("openai", (k := P("sk-", "proj-", chars(URLSAFE, 48))) and f"key {k}", k),
    Case("github-classic", f"git push https://x:{GHP}@github.com/o/r", GHP),
    Case("github-fine-grained", (k := P("github_", "pat_", chars(ALNUM + "_", 82))), k),
    Case("gitlab", (k := P("gl", "pat-", chars(URLSAFE, 20))), k),
    Case("slack-bot", (k := P("xo", "xb-", "1234567890-", chars(ALNUM, 24))), k),
    Case("slack-app", (k := P("xa", "pp-1-A0", chars(ALNUM, 9), "-", chars(ALNUM, 40))), k),
    Case(
        "slack-webhook",
        (
            k := P("https://hooks.", "slack.com/services/T0", chars(ALNUM, 8), "/B0")
            + chars(ALNUM, 24)
        ),
        k,
    ),
    Case("stripe", (k := P("sk_", "live_", chars(ALNUM, 24))), k),
    Case("google-api", (k := P("AI", "za", chars(URLSAFE, 35))), k),
    Case("gcp-oauth-access", (k := P("ya", "29.", chars(URLSAFE, 120))), k),
    Case(
        "gcp-client-secret", f'"client_secret": "{(k := P("GOC", "SPX-") + chars(URLSAFE, 28))}"', k
    ),
    Case("gcp-refresh-token", f"refresh: {(k := P('1/', '/0', chars(URLSAFE, 100)))}", k),
    Case(
        "azure-storage-connection",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        f"{(k := chars(BASE64, 86) + '==')};EndpointSuffix=core.windows.net",
        k,
    ),
    Case(
        "azure-sas",
        f"https://acct.blob.core.windows.net/c?sv=2022-11-02&se=2026-12-01&sp=r&sig="
        f"{(k := chars(ALNUM, 40) + '%2B' + chars(ALNUM, 10) + '%3D')}",
        k,
    ),
    Case("azure-ad-client-secret", (k := P(chars(ALNUM, 3), "8Q~", chars(URLSAFE, 34))), k),
    Case("sendgrid", (k := P("S", "G.", chars(URLSAFE, 22), ".", chars(URLSAFE, 43))), k),
    Case("aws-access-key", f"aws_access_key_id = {AKIA}", AKIA),
    Case(
        "aws-secret-key",
        f"AWS_SECRET_ACCESS_KEY={(k := chars(ALNUM + '/+', 40))}",
        k,
    ),
    Case("huggingface", (k := P("h", "f_", chars(ALNUM, 34))), k),
    Case("npm", (k := P("np", "m_", chars(ALNUM, 36))), k),
    Case("pypi", (k := P("pypi-", "AgEIcHlwaS5vcmc", chars(URLSAFE, 60))), k),
    Case("twilio", (k := P("S", "K", chars(LOWER_HEX, 32))), k),
    Case("mailgun", (k := P("ke", "y-", chars(LOWER_HEX, 32))), k),
    Case("mailchimp", (k := P(chars(LOWER_HEX, 32), "-us", "14")), k),
    Case("shopify", (k := P("shp", "at_", chars(LOWER_HEX, 32))), k),
    Case("digitalocean", (k := P("do", "p_v1_", chars(LOWER_HEX, 64))), k),
    Case("databricks", (k := P("da", "pi", chars(LOWER_HEX, 32))), k),
    Case("telegram-bot", (k := P("123456789", ":AA", chars(URLSAFE, 33))), k),
    Case("vault", (k := P("hv", "s.", chars(URLSAFE, 90))), k),
    Case("age", (k := P("AGE-SECRET-", "KEY-1") + chars(string.ascii_uppercase + "0234", 58)), k),
    Case("groq", (k := P("gs", "k_", chars(ALNUM, 52))), k),
    Case("docker-hub", (k := P("dckr", "_pat_", chars(URLSAFE, 27))), k),
    Case("linear", (k := P("lin", "_api_", chars(ALNUM, 40))), k),
    Case("notion", (k := P("nt", "n_", chars(ALNUM, 46))), k),
    Case("grafana", (k := P("gl", "sa_", chars(ALNUM, 32), "_", chars(LOWER_HEX, 8))), k),
    Case("square", (k := P("sq0", "atp-", chars(URLSAFE, 22))), k),
    Case("doppler", (k := P("dp", ".pt.", chars(ALNUM, 43))), k),
    Case("pulumi", (k := P("pu", "l-", chars(LOWER_HEX, 40))), k),
    Case("supabase", (k := P("sb", "p_", chars(LOWER_HEX, 40))), k),
    Case("alibaba", (k := P("LT", "AI", chars(ALNUM, 20))), k),
    Case("heroku", (k := P("HR", "KU-", chars(URLSAFE, 60))), k),
    Case("atlassian", (k := P("ATA", "TT3", chars(URLSAFE, 180))), k),
    Case("new-relic", (k := P("NR", "AK-", chars(string.ascii_uppercase + string.digits, 27))), k),
    Case("sentry", (k := P("sntr", "ys_", chars(ALNUM, 60))), k),
    Case("postman", (k := P("PM", "AK-", chars(LOWER_HEX, 24), "-", chars(LOWER_HEX, 34))), k),
    Case("replicate", (k := P("r", "8_", chars(ALNUM, 37))), k),
    Case("perplexity", (k := P("ppl", "x-", chars(ALNUM, 48))), k),
    Case("xai", (k := P("xa", "i-", chars(ALNUM, 80))), k),
    Case("terraform", (k := P(chars(ALNUM, 14), ".atlas", "v1.", chars(ALNUM, 67))), k),
    Case("bitbucket", (k := P("AT", "BB", chars(ALNUM, 32))), k),
    Case(
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"{(k := chars(BASE64, 70))}\n{chars(BASE64, 70)}\n-----END OPENSSH PRIVATE KEY-----",
        k,
    ),
]

PASSWORDS: list[Case] = [
    Case("assignment", f"password={PASSWORD}", PASSWORD),
    Case("env-glued-name", f"PGPASSWORD={PASSWORD} psql -h db -U app", PASSWORD),
    Case("mysql-pwd-env", f"MYSQL_PWD={PASSWORD} mysql -u app", PASSWORD),
    Case("quoted-with-space", f"export DB_PASSWORD='{PASSWORD} tail'", PASSWORD),
    Case("starts-with-at", f"password: @{PASSWORD}", PASSWORD),
    Case("starts-with-dollar", f"password=${PASSWORD}", PASSWORD),
    Case("starts-with-percent", f"password = %{PASSWORD}", PASSWORD),
    Case("mysql-p", f"mysql -u root -p{PASSWORD} appdb", PASSWORD),
    Case("sshpass", f"sshpass -p '{PASSWORD}' ssh deploy@host", PASSWORD),
    Case("docker-login", f"docker login -u bot -p {PASSWORD} registry.example.com", PASSWORD),
    Case("password-option", f"tool sync --password {PASSWORD} --verbose", PASSWORD),
    Case("netrc-line", f"machine api.example.com login bot password {PASSWORD}", PASSWORD),
    Case("netrc-lines", f"machine api.example.com\n  login bot\n  password {PASSWORD}\n", PASSWORD),
    Case("curl-u", f"curl -u bot:{PASSWORD} https://api.example.com/v1", PASSWORD),
    Case("curl-user", f'curl --user "bot:{PASSWORD}" https://api.example.com', PASSWORD),
    Case("sql-identified-by", f"CREATE USER app IDENTIFIED BY '{PASSWORD}';", PASSWORD),
    Case("sql-with-password", f"ALTER ROLE app WITH PASSWORD '{PASSWORD}';", PASSWORD),
    Case("redis-cli", f"redis-cli -h cache -a {PASSWORD} ping", PASSWORD),
    Case("redis-conf", f"requirepass {PASSWORD}", PASSWORD),
    Case("connection-string", f"Server=db;Database=app;User Id=sa;Password={PASSWORD};", PASSWORD),
    Case("odbc-pwd", f"DRIVER={{PostgreSQL}};UID=app;PWD={PASSWORD};", PASSWORD),
    Case("prose", f"The staging password is {PASSWORD}.", PASSWORD),
    Case("prose-ja", f"ステージングのパスワードは {PASSWORD} です。", PASSWORD),
    Case("json", f'{{"password": "{PASSWORD}"}}', PASSWORD),
    Case("url", f"postgres://app:{PASSWORD}@db.example.com:5432/app", PASSWORD),
    Case(
        "powershell",
        f'$p = ConvertTo-SecureString "{PASSWORD}" -AsPlainText -Force',
        PASSWORD,
    ),
    Case(
        "docker-config-auth",
        '{"auths": {"r.io": {"auth": "'
        + (k := base64.b64encode(f"bot:{PASSWORD}".encode()).decode())
        + '"}}}',
        k,
    ),
]


def _jwt(header: str, payload: str, signature: str) -> str:
    def enc(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    return f"{enc(header)}.{enc(payload)}.{signature}"


ZW = "\u200b"
EVASIONS: list[Case] = [
    Case("wrapped-over-lines", f"key:\n{ANT[:40]}\n{ANT[40:80]}\n{ANT[80:]}\nnext", ANT[40:80]),
    Case("wrapped-short-head", f"{ANT[:13]}\n{ANT[13:]}", ANT[13:]),
    Case("backslash-continued", f"export GH_TOKEN={GHP[:20]}\\\n    {GHP[20:]}", GHP[20:]),
    Case("base64-encoded", f"echo {base64.b64encode(ANT.encode()).decode()} | base64 -d", ANT),
    Case(
        "base64-of-assignment",
        f"data:\n  config: {base64.b64encode(f'password={PASSWORD}'.encode()).decode()}",
        base64.b64encode(f"password={PASSWORD}".encode()).decode(),
    ),
    Case("url-encoded-assignment", f"https://x.example/cb?api_key%3D{PASSWORD}%26x%3D1", PASSWORD),
    Case("url-encoded-password", f"https://x.example/login?password%3D{PASSWORD}", PASSWORD),
    Case(
        "jwt",
        (k := _jwt('{"alg":"HS256"}', '{"sub":"deploy"}', chars(URLSAFE, 43))),
        k,
    ),
    Case("jwt-spaced-header", (k := _jwt('{ "alg": "HS256" }', "x" * 20, chars(URLSAFE, 43))), k),
    Case("jwt-newline-header", (k := _jwt('{\n "alg": "RS256"\n}', "{}", chars(URLSAFE, 86))), k),
    Case("jwt-unsigned", (k := _jwt('{"alg":"none"}', '{"sub":"admin","role":"root"}', "")), k),
    Case(
        "jwe",
        (
            k := _jwt('{"alg":"RSA-OAEP","enc":"A256GCM"}', "", "")[:-1]
            + ".".join(chars(URLSAFE, n) for n in (40, 16, 60, 22))
        ),
        k,
    ),
    Case("zero-width-inside", f"key {ANT[:30]}{ZW}{ANT[30:]}", ANT[30:]),
    Case("word-joiner-inside", f"{AKIA[:8]}\u2060{AKIA[8:]}", AKIA),
    Case("soft-hyphen-inside", f"{GHP[:10]}\u00ad{GHP[10:]}", GHP[10:]),
    Case("tags-inside", f"{GHP[:10]}\U000e0041\U000e0042{GHP[10:]}", GHP[10:]),
    Case("bom-inside-password", f"password=\ufeff{PASSWORD}", PASSWORD),
]

ALL: list[Case] = PROVIDERS + PASSWORDS + EVASIONS


def leaked(secret: str, shown: str, piece: int = 12) -> str | None:
    """The first `piece`-character run of `secret` found in `shown`, or None."""
    if len(secret) <= piece:
        return secret if secret in shown else None
    for start in range(len(secret) - piece + 1):
        if secret[start : start + piece] in shown:
            return secret[start : start + piece]
    return None
