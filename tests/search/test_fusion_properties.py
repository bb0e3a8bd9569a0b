"""Properties of the fusion on generated rankings, through the engine's own pure functions
(bridge.across_languages, results.fuse_signals, results.final_score / order_key):

- dominance: a hit at least as good as another on every signal that applies to the query
  (keyword rank, vector rank, translated-keyword rank in a note of the other language,
  entity rank, status, recency, folder weight) never ranks below it;
- the bridge only where languages differ: a query over notes all in its own language ranks
  exactly as with the bridge off.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import note as show
from hypothesis import strategies as st

from tsm.search import fuse
from tsm.search.bridge import across_languages, text_language
from tsm.search.results import Signals, final_score, fuse_signals, order_key

K = 1000
LANGUAGES = ("ja", "en")
STATUSES = (None, "current", "draft", "outdated", "superseded", "rejected")


@dataclass(frozen=True)
class Note:
    """One generated note: its language, its score on each signal (None: not found), and
    its multipliers."""

    language: str
    keyword: float | None
    vector: float | None
    bridge: tuple[float | None, float | None]  # translated from ja, from en
    entity: int | None  # specificity: fewer notes carry the tag, the better
    status: str | None
    age_days: float | None
    weight: float


WEIGHTS = (0.5, 1.0, 1.5, 3.0)
QUERY_BYTES, NOTE_BYTES = 6, 9


def pick(byte: int, options: tuple) -> Any:
    return options[byte * len(options) // 256]


def level(byte: int, low: float, high: float, none_below: int = 0) -> float | None:
    """A byte as a value between low and high; below `none_below`, None (not found)."""
    if byte < none_below:
        return None
    return low + (byte - none_below) / (255 - none_below) * (high - low)


def decode(raw: bytes) -> tuple[list[Note], dict]:
    """A query and 2-8 notes from a byte string, so each example is one draw: drawing every
    value separately made hypothesis's bookkeeping ~50 times the cost of the fusion itself.
    Bytes shrink towards 0, and 0 decodes to the plainest case (not found, no status, the
    first language), so a failure still shrinks to a small readable vault. A byte has 256
    levels, so equal scores, where ranks are decided by order alone, come up often."""
    raw = raw.ljust(QUERY_BYTES + 2 * NOTE_BYTES, b"\0")
    q = raw[:QUERY_BYTES]
    query = {
        "languages": pick(q[0], (("ja",), ("en",), ("ja", "en"))),
        "keyword_weight": level(q[1], 0.05, 1.0),
        "vector_weight": level(q[2], 0.3, 3.4),
        "background": level(q[3], 0.0, 0.5, none_below=64),
        "bridge_weight": level(q[4], 0.05, fuse.BRIDGE_WEIGHT),
        "half_life": pick(q[5], (None, 30.0, 90.0, 365.0)),
    }
    batch = []
    for start in range(QUERY_BYTES, len(raw) - NOTE_BYTES + 1, NOTE_BYTES):
        b = raw[start : start + NOTE_BYTES]
        batch.append(
            Note(
                language=pick(b[0], LANGUAGES),
                keyword=level(b[1], 0.01, 30.0, none_below=64),  # BM25 of a match is > 0
                vector=level(b[2], -0.2, 1.0, none_below=64),
                bridge=(level(b[3], 0.01, 30.0, none_below=128), level(b[4], 0.01, 30.0, 128)),
                entity=None if b[5] < 160 else b[5] % 5,
                status=pick(b[6], STATUSES),
                age_days=level(b[7], 0.0, 4000.0, none_below=64),
                weight=pick(b[8], WEIGHTS),
            )
        )
    return batch, query


def vaults(min_notes: int) -> st.SearchStrategy[tuple[list[Note], dict]]:
    return st.binary(
        min_size=QUERY_BYTES + min_notes * NOTE_BYTES, max_size=QUERY_BYTES + 8 * NOTE_BYTES
    ).map(decode)


def ranking(values: dict[int, float | None]) -> list[tuple[int, int, float]]:
    """(chunk id, document id, score), best first; chunk id = document id here."""
    found = [(doc, score) for doc, score in values.items() if score is not None]
    found.sort(key=lambda item: (-item[1], item[0]))
    return [(doc, doc, score) for doc, score in found]


def positions(ranked: list[tuple[int, int, float]]) -> dict[int, int]:
    return {doc: rank for rank, (_, doc, _) in enumerate(ranked, start=1)}


def entity_ranks(found: dict[int, int | None]) -> list[tuple[int, int, int]]:
    from tsm.search.entities import shared_ranks

    present = sorted((spec, doc) for doc, spec in found.items() if spec is not None)
    return [
        (doc, doc, rank)
        for (_, doc), rank in zip(present, shared_ranks([s for s, _ in present]), strict=True)
    ]


def fused(
    batch: list[Note], query: dict, bridge_on: bool = True
) -> tuple[list[int], dict[int, dict[str, float]]]:
    """The order the engine gives these notes, and each note's signal ranks (lower is
    better; absent: not found or not applicable) and multipliers (higher is better). A
    signal applies when its weight for the query is above 0 (the engine gives a keyword
    ranking that matched none of the query's point 0, and generated weights start at
    0.05)."""
    language_of = {doc: note.language for doc, note in enumerate(batch)}
    keyword = ranking({d: n.keyword for d, n in enumerate(batch)})
    vector = ranking({d: n.vector for d, n in enumerate(batch)})
    bridges = []
    bridge_ranks: list[dict[int, int]] = []
    for i, source in enumerate(LANGUAGES):
        if not bridge_on or source not in query["languages"]:
            continue
        found = ranking({d: n.bridge[i] for d, n in enumerate(batch)})
        bridges.append((across_languages(found, language_of, source), query["bridge_weight"]))
        # a translation applies to the notes in the other language only
        applies = [hit for hit in found if batch[hit[1]].language != source]
        bridge_ranks.append(positions(applies))
    entity = entity_ranks({d: n.entity for d, n in enumerate(batch)})
    candidates = fuse_signals(
        Signals(
            keyword=keyword,
            keyword_weight=query["keyword_weight"],
            vector=vector,
            vector_weight=query["vector_weight"],
            background=query["background"],
            bridges=bridges,
            entity=entity,
        ),
        K,
    )
    signals: dict[int, dict[str, float]] = {}
    keys = {}
    for doc, note in enumerate(batch):
        rec = fuse.recency(note.age_days, query["half_life"])
        status = fuse.status_penalty(note.status)
        signals[doc] = {"recency": rec, "status": status, "weight": note.weight}
        if doc in candidates:
            keys[doc] = order_key(candidates[doc], rec, status, note.weight)
            assert final_score(candidates[doc], rec, status, note.weight) == -keys[doc][0]
    # A cosine at or below the floor says "unrelated", as of a note not found: the floor is
    # the query's mean cosine, or without one the ranking's lowest unless all tie
    # (fuse.score_scaled_rrf: tied scores are plain RRF).
    floor = query["background"]
    if floor is None:
        spread = bool(vector) and vector[0][2] > vector[-1][2]
        floor = vector[-1][2] if spread else float("-inf")
    ranks = {
        "keyword": positions(keyword),
        "vector": {d: r for d, r in positions(vector).items() if batch[d].vector > floor},
        "entity": {doc: rank for _, doc, rank in entity},
        **{f"bridge{i}": r for i, r in enumerate(bridge_ranks)},
    }
    for name, rank_of in ranks.items():
        for doc, rank in rank_of.items():
            signals[doc][name] = rank
    return sorted(keys, key=keys.__getitem__), signals


def at_least_as_good(a: dict[str, float], b: dict[str, float]) -> tuple[bool, bool]:
    """(a is at least as good as b on every signal, and better on one)."""
    ranked = {"keyword", "vector", "entity", "bridge0", "bridge1"}
    multipliers = {"recency", "status", "weight"}
    as_good, better = True, False
    for name in ranked:
        if name in b and (name not in a or a[name] > b[name]):
            as_good = False
        if name in a and (name not in b or a[name] < b[name]):
            better = True
    for name in multipliers:
        if a[name] < b[name]:
            as_good = False
        if a[name] > b[name]:
            better = True
    return as_good, better


# Each generated vault of up to 8 notes checks every ordered pair of them (up to 56).
@settings(max_examples=10_000, deadline=None)
@given(vaults(min_notes=2))
def test_a_hit_as_good_on_every_signal_never_ranks_below(case: tuple[list[Note], dict]) -> None:
    batch, query = case
    show(f"{batch}\n{query}")  # the vault, decoded, beside a failure's bytes
    order, signals = fused(batch, query)
    place = {doc: i for i, doc in enumerate(order)}
    for a in order:
        for b in order:
            as_good, better = at_least_as_good(signals[a], signals[b])
            if as_good and better:
                assert place[a] < place[b], (a, b, signals[a], signals[b])


@settings(max_examples=2_000, deadline=None)
@given(vaults(min_notes=1), st.sampled_from(LANGUAGES))
def test_the_bridge_changes_nothing_inside_one_language(
    case: tuple[list[Note], dict], language: str
) -> None:
    batch, query = case
    same = [replace(one, language=language) for one in batch]
    show(f"{same}\n{query}")
    query = query | {"languages": (language,)}
    with_bridge, signals = fused(same, query)
    without, _ = fused(same, query, bridge_on=False)
    assert with_bridge == without
    assert not any(name.startswith("bridge") for s in signals.values() for name in s)


def test_the_languages_of_plain_texts() -> None:
    """A Japanese note quoting names and a link stays Japanese; an English one quoting a
    Japanese term stays English."""
    assert text_language("LoRa通信モジュールの選定基準をまとめる") == "ja"
    assert (
        text_language("モジュールの選び方は [LoRa選定ガイド](lora-module-guide.md) にまとめた。")
        == "ja"
    )
    assert text_language("The boundary layer separates ahead of the shock wave.") == "en"
    assert text_language("Hunting licences (狩猟免許) are issued by the prefecture.") == "en"
    assert text_language("12345 --- ###") == "en"
