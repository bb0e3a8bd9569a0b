"""The second abstention vault: several hundred files of real documentation, Japanese and
English, that no one here wrote, fetched reproducibly from pinned packages.

    .venv/bin/python bench/abstention_docs.py     # fetch (once), build and check the vault

Sources (versions and hashes pinned below; downloads cached in bench/.cache/downloads/):

    fastify 5.12.8 (npm, MIT)            docs/Guides, docs/Reference and README (English)
    pino 10.4.0 (npm, MIT)               docs/ and README (English)
    undici 7.30.2 (npm, MIT)             docs/docs/api, docs/docs/best-practices (English)
    markdownlint 0.40.0 (npm, MIT)       doc/ (English: one file per rule) and README
    debian-reference-ja 2.100 (Debian, GPL-2+)
                                         the Debian Reference in Japanese, HTML split into one
                                         Markdown file per section (10.1, 10.2, …)
    manpages-ja 0.5.0.0.20221215+dfsg-1 (Debian; each page under the licence of its
                                         original, DFSG-free, see the package's copyright)
                                         the GNU coreutils pages and a list of system pages
                                         (sections 5 and 8) in Japanese, roff turned into
                                         Markdown; a `.so` page or a link is a copy of its
                                         target, as `man` shows it (same text, another path)

The vault is written to bench/.cache/abstention-docs/vault/ (git-ignored) and its digest is
checked, so the prompts' expected paths (bench/abstention/docs-prompts.jsonl) stay true.
Needs `npm`, `apt-get` (with `apt-get update` done) and `dpkg-deb`; no root.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
DOWNLOADS = CACHE / "downloads"
VAULT = CACHE / "abstention-docs" / "vault"
# sha256 over the sorted (path, content) pairs of the built vault
VAULT_DIGEST = "bbe210bd6799d2e5c2937dab5587d79b7b3478fe587b8f83230f9d9a8294ccdf"


@dataclass(frozen=True)
class Source:
    kind: str  # "npm" or "deb"
    name: str
    version: str
    filename: str
    sha256: str
    licence: str


SOURCES = (
    Source(
        "npm",
        "fastify",
        "5.12.8",
        "fastify-5.12.8.tgz",
        "459048aabd9311309f4f95b36e8ca065e3a4613ded292bcf50442926931e4748",
        "MIT",
    ),
    Source(
        "npm",
        "pino",
        "10.4.0",
        "pino-10.4.0.tgz",
        "f745d3dee0bddd39f11226335ee6dbbe3d49cc037168f2b31a8cdbe78f0e6216",
        "MIT",
    ),
    Source(
        "npm",
        "undici",
        "7.30.2",
        "undici-7.30.2.tgz",
        "2bf5b1c41724614729cb383f22c64506b6665869d385de862752c33763fcce1b",
        "MIT",
    ),
    Source(
        "npm",
        "markdownlint",
        "0.40.0",
        "markdownlint-0.40.0.tgz",
        "68adab60a00e5d084544e7c2c7a49ff52050d71950ffcc77442bded32a1ac9fb",
        "MIT",
    ),
    Source(
        "deb",
        "debian-reference-ja",
        "2.100",
        "debian-reference-ja_2.100_all.deb",
        "f67140e0b994409413bd5fcc8dfcce832445c99d724401f0275fa238daf30325",
        "GPL-2+",
    ),
    Source(
        "deb",
        "manpages-ja",
        "0.5.0.0.20221215+dfsg-1",
        "manpages-ja_0.5.0.0.20221215+dfsg-1_all.deb",
        "4d270e9a1e83be4de0c072a110892a17dc9caa4b501257324006ac28d82c5743",
        "the original pages' licences (DFSG-free; see the package's copyright file)",
    ),
)

NPM_DOCS = {  # package → tar member prefixes (under package/) of the Markdown kept
    "fastify": ("docs/Guides/", "docs/Reference/", "README.md"),
    "pino": ("docs/", "README.md"),
    "undici": ("docs/docs/api/", "docs/docs/best-practices/"),
    "markdownlint": ("doc/", "README.md"),
}
# manpages-ja: every GNU coreutils page of section 1, and these system pages
MAN_PAGES = (
    "man5/crontab.5",
    "man5/fstab.5",
    "man5/group.5",
    "man5/hosts.5",
    "man5/locale.5",
    "man5/nsswitch.conf.5",
    "man5/resolv.conf.5",
    "man5/services.5",
    "man5/shells.5",
    "man5/sudoers.5",
    "man5/sysctl.conf.5",
    "man5/syslog.conf.5",
    "man5/motd.5",
    "man5/netrc.5",
    "man8/blkid.8",
    "man8/cron.8",
    "man8/e2fsck.8",
    "man8/fdisk.8",
    "man8/fsck.8",
    "man8/grub-install.8",
    "man8/grub-mkconfig.8",
    "man8/hwclock.8",
    "man8/ifconfig.8",
    "man8/iptables.8",
    "man8/iptables-save.8",
    "man8/iptables-restore.8",
    "man8/ld.so.8",
    "man8/ld-linux.8",
    "man8/ld-linux.so.8",
    "man8/ldconfig.8",
    "man8/lsblk.8",
    "man8/mke2fs.8",
    "man8/mkswap.8",
    "man8/modprobe.8",
    "man8/mount.8",
    "man8/netstat.8",
    "man8/ping.8",
    "man8/resize2fs.8",
    "man8/route.8",
    "man8/sfdisk.8",
    "man8/tune2fs.8",
    "man8/umount.8",
)


def fetch(source: Source) -> Path:
    """The pinned file, downloaded once with the registry's own client, hash checked."""
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    path = DOWNLOADS / source.filename
    if not path.exists():
        if source.kind == "npm":
            cmd = ["npm", "pack", "--silent", f"{source.name}@{source.version}"]
            cmd += ["--pack-destination", str(DOWNLOADS)]
        else:
            cmd = ["apt-get", "download", f"{source.name}={source.version}"]
        done = subprocess.run(cmd, cwd=DOWNLOADS, capture_output=True, text=True)
        if done.returncode != 0 or not path.exists():
            raise SystemExit(f"cannot fetch {source.name} {source.version}: {done.stderr.strip()}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != source.sha256:
        path.unlink()
        raise SystemExit(f"{path.name}: sha256 {digest}, expected {source.sha256}; removed")
    return path


def deb_files(path: Path) -> dict[str, bytes]:
    """The regular files of a .deb (via dpkg-deb), by path without the leading './'."""
    tar_bytes = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(path)], capture_output=True, check=True
    ).stdout
    files, links = {}, {}
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("./")
            if member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                files[name] = handle.read()
            elif member.issym():  # a page installed as a link to another: the same text
                links[name] = str(Path(name).parent / member.linkname)
    for name, target in links.items():
        if target in files:
            files[name] = files[target]
    return files


def npm_docs(source: Source, path: Path) -> dict[str, str]:
    out = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if member.isfile() and name.endswith(".md") and name.startswith(NPM_DOCS[source.name]):
                handle = tar.extractfile(member)
                assert handle is not None
                short = name.removeprefix("docs/docs/").removeprefix("docs/")
                out[f"{source.name}/{short}"] = handle.read().decode("utf-8")
    return out


# ---- Debian Reference: DocBook HTML → Markdown, one file per section (h2)


class _HtmlToMarkdown(HTMLParser):
    BLOCKS = {"p", "div", "li", "dt", "dd", "tr", "table", "ul", "ol", "dl", "br", "h1"}
    SKIP = {"toc", "navheader", "navfooter", "titlepage-skip"}
    SECTION = "\x00SECTION\x00"  # marks an h2: a "# " line may also be a shell comment
    HEADINGS = {"h2": SECTION + "# ", "h3": "## ", "h4": "### "}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip_depth = 0  # >0 inside a skipped div
        self.div_stack: list[bool] = []
        self.pre = False
        self.anchor: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag == "div":
            skipped = cls in self.SKIP
            self.div_stack.append(skipped)
            self.skip_depth += skipped
        if self.skip_depth or tag in ("head", "title"):
            return
        if tag in self.HEADINGS:
            self.out.append("\n\n" + self.HEADINGS[tag])
        elif tag == "a" and dict(attrs).get("id") and self.out and self.out[-1].endswith("# "):
            self.out.append(f"{{#{dict(attrs)['id']}}}")
        elif tag == "pre":
            self.pre = True
            self.out.append("\n\n```\n")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag in self.BLOCKS and not (self.out and self.out[-1].endswith("- ")):
            self.out.append("\n\n" if tag == "p" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.div_stack:
            self.skip_depth -= self.div_stack.pop()
            return
        if self.skip_depth:
            return
        if tag == "pre":
            self.pre = False
            self.out.append("\n```\n\n")
        elif tag in self.HEADINGS or tag in ("p", "tr"):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
            if self.out and self.out[-1].endswith(("- ", "\n")):
                data = data.lstrip()
        if data:
            self.out.append(data)


def debian_reference(files: dict[str, bytes]) -> dict[str, str]:
    out = {}
    base = "usr/share/debian-reference/"
    for name in sorted(files):
        m = re.fullmatch(re.escape(base) + r"(ch\d\d|apa|pr01)\.ja\.html", name)
        if not m:
            continue
        parser = _HtmlToMarkdown()
        parser.feed(files[name].decode("utf-8"))
        text = "".join(parser.out)
        sections = text.split(_HtmlToMarkdown.SECTION)
        for section in sections[1:]:
            head, _, body = section.partition("\n")
            anchor = re.search(r"\{#_?([^}]+)\}", head)
            title = re.sub(r"\{#[^}]*\}", "", head[2:]).strip()
            number = re.match(r"[\dA-Z.]+", title)
            slug = (anchor.group(1) if anchor else "section").strip("_").replace("_", "-")
            prefix = number.group(0).rstrip(".") + "-" if number else ""
            body = re.sub(r"\{#[^}]*\}", "", body)
            body = re.sub(r"[ \t]+\n", "\n", body)
            body = re.sub(r"\n{3,}", "\n\n", body).strip()
            chapter = m.group(1)
            out[f"debian-reference-ja/{chapter}/{prefix}{slug[:60]}.md"] = f"# {title}\n\n{body}\n"
    return out


# ---- manpages-ja: roff → Markdown

_FONT = re.compile(r"\\f(?:\(..|\[[^\]]*\]|.)")
_ESCAPES = {
    r"\-": "-",
    r"\&": "",
    r"\e": "\\",
    r"\ ": " ",
    r"\,": "",
    r"\/": "",
    r"\|": "",
    r"\^": "",
    r"\c": "",
    r"\(aq": "'",
    r"\(dq": '"',
    r"\(em": "—",
    r"\(en": "–",
    r"\(bu": "•",
    r"\(co": "©",
    r"\(lq": "“",
    r"\(rq": "”",
    r"\(cq": "'",
    r"\(oq": "'",
    r"\(ti": "~",
    r"\(ha": "^",
    r"\(rs": "\\",
    r"\(mu": "×",
    r"\(<=": "≤",
    r"\(>=": "≥",
    r"\(->": "→",
}


def _unescape(text: str) -> str:
    text = _FONT.sub("", text)
    for old, new in _ESCAPES.items():
        text = text.replace(old, new)
    text = re.sub(r"\\\*(?:\(..|\[[^\]]*\]|.)", "", text)  # strings
    text = re.sub(r"\\[sS][+-]?\d", "", text)  # size changes
    text = re.sub(r"\\\((..)", "", text)  # other glyphs
    return text


def _args(line: str) -> list[str]:
    return [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', line)]


def roff_to_markdown(source: str) -> str:
    out: list[str] = []
    title = ""
    for raw in source.splitlines():
        line = raw.rstrip()
        if line.startswith(('.\\"', "'\\\"", '.\\"')) or line in (".", "'"):
            continue
        if not line.startswith((".", "'")):
            out.append(_unescape(line))
            continue
        macro, _, rest = line[1:].strip().partition(" ")
        rest = rest.strip()
        if macro == "TH":
            parts = _args(rest)
            title = parts[0].lower() if parts else ""
            section = parts[1] if len(parts) > 1 else ""
            out.append(f"# {title}({section})\n")
        elif macro in ("SH", "SS"):
            mark = "##" if macro == "SH" else "###"
            out.append(f"\n{mark} {_unescape(' '.join(_args(rest)))}\n")
        elif macro in ("PP", "LP", "P", "sp", "TP", "HP", "br"):
            out.append("")
        elif macro == "IP":
            tag = _args(rest)[0] if rest else ""
            out.append(f"\n{_unescape(tag)}" if tag and tag not in ("\\(bu", "\\[bu]") else "")
        elif macro in ("B", "I", "SM", "SB"):
            out.append(_unescape(" ".join(_args(rest))))
        elif macro in ("BR", "BI", "IR", "IB", "RB", "RI"):
            out.append(_unescape("".join(_args(rest))))
        elif macro in ("nf", "EX"):
            out.append("\n```")
        elif macro in ("fi", "EE"):
            out.append("```\n")
        # every other request (.in, .RS, .RE, .ad, .na, .de …) is layout only
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def manpages(files: dict[str, bytes]) -> dict[str, str]:
    base = "usr/share/man/ja/"
    pages = {n.removeprefix(base).removesuffix(".gz"): n for n in files if n.startswith(base)}

    def source(page: str, depth: int = 0) -> str:
        text = gzip.decompress(files[pages[page]]).decode("utf-8", errors="replace")
        so = re.match(r"\.so\s+(\S+)", text.strip())
        if so and depth < 3:
            target = so.group(1).removeprefix("ja/")
            return source(target, depth + 1)
        return text

    chosen = set(MAN_PAGES)
    for page in pages:
        if page.startswith("man1/"):
            th = re.search(r"^\.TH .*$", source(page), re.M)
            if th and "GNU coreutils" in th.group(0):
                chosen.add(page)
    out = {}
    for page in sorted(chosen):
        if page not in pages:
            raise SystemExit(f"manpages-ja has no {page}")
        section, name = page.split("/")
        stem = name.rsplit(".", 1)[0]
        out[f"manpages-ja/{section}/{stem}.md"] = roff_to_markdown(source(page))
    return out


def build() -> dict[str, str]:
    notes: dict[str, str] = {}
    for source in SOURCES:
        path = fetch(source)
        if source.kind == "npm":
            notes.update(npm_docs(source, path))
        elif source.name == "debian-reference-ja":
            notes.update(debian_reference(deb_files(path)))
        else:
            notes.update(manpages(deb_files(path)))
    return notes


def digest(notes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(notes):
        h.update(path.encode() + b"\0" + notes[path].encode() + b"\0")
    return h.hexdigest()


def ensure_vault() -> Path:
    """Build the vault if it is missing or differs from the pinned digest; return its path."""
    stamp = VAULT.parent / "digest"
    if stamp.exists() and stamp.read_text().strip() == VAULT_DIGEST and VAULT.is_dir():
        return VAULT
    notes = build()
    got = digest(notes)
    if got != VAULT_DIGEST:
        print(
            f"warning: vault digest {got} differs from the pinned {VAULT_DIGEST}", file=sys.stderr
        )
    # Files already as built keep their mtime, so the kept index does not see them as changed.
    for old in VAULT.rglob("*.md") if VAULT.exists() else ():
        if old.relative_to(VAULT).as_posix() not in notes:
            old.unlink()
    for rel, text in notes.items():
        path = VAULT / rel
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    stamp.write_text(got + "\n")
    return VAULT


if __name__ == "__main__":
    vault = ensure_vault()
    files = sorted(p for p in vault.rglob("*.md"))
    by_top: dict[str, int] = {}
    for p in files:
        top = p.relative_to(vault).parts[0]
        by_top[top] = by_top.get(top, 0) + 1
    print(f"{vault}: {len(files)} files, {sum(p.stat().st_size for p in files) // 1024} KiB")
    for top, n in sorted(by_top.items()):
        print(f"  {top}: {n}")
