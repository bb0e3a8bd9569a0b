"""A generated vault of mixed English/Japanese notes (~2 KB each) for speed benchmarks.
Deterministic (seeded), with frontmatter, headings, tags and wikilinks like real notes."""

from __future__ import annotations

import random
from pathlib import Path

EN = (
    "git install release branch merge sqlite index query vector embedding model search "
    "note daily meeting decision design server client latency memory cache disk backup "
    "python rust docker network packet radio antenna tracker hunting license report app "
    "battery solar module sensor firmware bluetooth lora range power test deploy"
).split()
JA = (
    "狩猟 免許 捕獲 報告 アプリ 無線 通信 距離 消費 電力 設計 会議 決定 検索 索引 "
    "記録 日報 調査 比較 資料 予算 試験 実装 改善 課題 対応 確認 連絡 共有 整理 "
    "データベース サーバー モジュール バッテリー センサー アンテナ"
).split()
JA_GLUE = ("を", "の", "に", "は", "が", "で", "と")


def _en_sentence(rng: random.Random) -> str:
    words = rng.choices(EN, k=rng.randint(8, 16))
    return " ".join(words).capitalize() + "."


def _ja_sentence(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(4, 8)):
        parts.append(rng.choice(JA) + rng.choice(JA_GLUE))
    return "".join(parts) + rng.choice(("した。", "する。", "確認した。", "検討中。"))


def note(rng: random.Random, n: int, target_bytes: int = 2048) -> str:
    ja = n % 2 == 1
    sentence = _ja_sentence if ja else _en_sentence
    tags = rng.sample(EN[:20], 2)
    lines = [
        "---",
        f"title: note {n}",
        f"tags: [{', '.join(tags)}]",
        f"date: 202{rng.randint(4, 6)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "---",
        f"# Note {n}",
        "",
    ]
    section = 0
    while len("\n".join(lines).encode()) < target_bytes:
        if len(lines) % 6 == 0:
            section += 1
            lines += [f"## Section {section}", ""]
        lines.append(" ".join(sentence(rng) for _ in range(3)))
        if rng.random() < 0.2:
            lines.append(f"See [[note-{rng.randint(0, n + 1)}]].")
        lines.append("")
    return "\n".join(lines)


def generate(root: Path, count: int, seed: int = 7) -> int:
    """Write `count` notes under root/notes/NN/; returns total bytes written."""
    rng = random.Random(seed)
    total = 0
    for n in range(count):
        folder = root / "notes" / f"{n // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = note(rng, n)
        (folder / f"note-{n}.md").write_text(text, encoding="utf-8")
        total += len(text.encode())
    return total
