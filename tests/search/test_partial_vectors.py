"""Search while vectors are missing, through the real CLI and
the real default embedding model: a new note not yet embedded, an index with no vector at
all, no model, and what total_matches counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NEW_NOTE = """---
title: Rotating the deploy keys
---
# Rotating the deploy keys

Every quarter the deploy keys of the build farm are rotated: generate a new ed25519 deploy
key, add it to the repository, remove the old deploy key, then restart the runners.
"""


def search(tsm: Any, *args: str) -> dict[str, Any]:
    result = tsm("search", *args, "-f", "json")
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def test_exact_keyword_hit_without_a_vector_ranks_first(indexed: Path, tsm: Any) -> None:
    """Every other note has a vector, the new one none yet: it holds every query word and
    must not lose to notes that only the vectors found (they used to outrank it: a hit
    without a vector counted its keywords alone against keywords + vector)."""
    (indexed / "notes" / "deploy-keys.md").write_text(NEW_NOTE, encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    data = search(tsm, "rotate the deploy keys of the build farm")
    assert data["mode"] == "hybrid"
    assert any("have no vector yet" in w and "tsm index" in w for w in data["warnings"])
    top = data["results"][0]
    assert top["source"]["path"] == "notes/deploy-keys.md", [
        (r["source"]["path"], r["score_breakdown"]) for r in data["results"]
    ]
    assert top["score_breakdown"]["vector"] == 0.0  # it has no vector: nothing is made up
    assert tsm("index", "-f", "json").code == 0  # embedded now: still first, no warning
    data = search(tsm, "rotate the deploy keys of the build farm")
    assert data["results"][0]["source"]["path"] == "notes/deploy-keys.md"
    assert not any("no vector yet" in w for w in data["warnings"])


def test_plain_search_before_the_first_vector(vault: Path, tsm: Any) -> None:
    """After `tsm index --no-embed` a plain search answers with keywords and a warning that
    names what embeds; only a search that asked for vectors fails (exit 2)."""
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    data = search(tsm, "install git")
    assert data["mode"] == "fts"
    assert data["results"][0]["source"]["path"] == "notes/git-install.md"
    (warning,) = [w for w in data["warnings"] if "vector search unavailable" in w]
    assert "no chunk has a vector" in warning and "`tsm index`" in warning
    assert search(tsm, "install git", "--fallback", "fts-only")["mode"] == "fts"
    for flags in (("--vec-only",), ("--fallback", "error")):
        failed = tsm("search", "install git", *flags, "-f", "json")
        assert failed.code == 2, (flags, failed.err)
        assert "vector search unavailable" in failed.error()["error"]
    human = tsm("search", "install git", "-f", "human")
    assert human.code == 0 and "git-install.md" in human.out


def test_plain_search_without_a_model(indexed: Path, tsm: Any) -> None:
    """No embedding model: keyword results with a warning; --vec-only fails."""
    off = {"TSM_EMBEDDER": "none"}
    result = tsm("search", "install git", "-f", "json", env=off)
    assert result.code == 0, result.err
    data = result.json()
    assert data["mode"] == "fts" and data["results"]
    assert any("vector search unavailable" in w for w in data["warnings"])
    assert tsm("search", "install git", "--vec-only", "-f", "json", env=off).code == 2


def test_total_matches_counts_matches_not_neighbours(indexed_read_only: Path, tsm: Any) -> None:
    """A word in one note: hybrid shows the nearest notes too, but counts as matches only
    the keyword hit and notes that clear the relevance floor, not every note the vectors
    returned; --vec-only counts only those above the floor."""
    keyword = search(tsm, "PPA", "--fts-only", "-k", "20")
    assert keyword["total_matches"] == len(keyword["results"]) == 1
    hybrid = search(tsm, "PPA", "-k", "20")
    assert len(hybrid["results"]) > 3  # the vector side returns every note
    floor = [
        r
        for r in hybrid["results"]
        if r["score_breakdown"]["fts"] or (r["score_breakdown"]["relevance"] or 0) > 0
    ]
    assert hybrid["total_matches"] == len(floor) < len(hybrid["results"])
    vector = search(tsm, "PPA", "--vec-only", "-k", "20")
    above = [r for r in vector["results"] if (r["score_breakdown"]["relevance"] or 0) > 0]
    assert vector["total_matches"] == len(above)


def test_total_matches_of_a_time_only_query(indexed_read_only: Path, tsm: Any) -> None:
    """A query made only of a time expression counts every document the dates let in, not
    the top k."""
    every = search(tsm, "this year", "-k", "100")
    assert len(every["results"]) >= 2
    one = search(tsm, "this year", "-k", "1")
    assert len(one["results"]) == 1
    assert one["total_matches"] == every["total_matches"] == len(every["results"])


# Two notes about renewing CI credentials in other words than the query's, embedded; three
# notes that hold the query's words, written after (no vector yet): the first all of them,
# the others one each.
RELATED = {
    "ci-credentials.md": "# Renewing CI credentials\n\nEach quarter the SSH credentials of the "
    "continuous integration machines are renewed: create a fresh ed25519 keypair, register "
    "it with the repository host, revoke the previous one, then restart every runner.\n",
    "runner-secrets.md": "# Runner secrets\n\nSecrets of the CI runners are replaced when "
    "someone leaves the team: new SSH keypair, registered with the repository host, old one "
    "revoked.\n",
}
KEYWORD_NOTES = {
    "deploy-keys.md": NEW_NOTE,
    "server-farm.md": "# The server farm\n\nCooling of the server farm costs more each summer; "
    "the second room gets its own air conditioning.\n",
    "docs-build.md": "# Docs build\n\nThe documentation site build takes four minutes; most "
    "of it is image optimisation.\n",
}


def test_keyword_hits_without_vectors_keep_the_keyword_order(indexed: Path, tsm: Any) -> None:
    """None of the query's keyword hits has a vector yet, most other notes do: nothing tells
    how the vectors would rank the keyword hits, so they keep the keyword search's order and
    the notes only the vectors found follow them (they used to rank above the hits holding
    one query word: a note only the vectors found counted its vector term, scaled by the
    index's coverage, against the hit's keyword score times a guessed gain)."""
    for name, text in RELATED.items():
        (indexed / "notes" / name).write_text(text, encoding="utf-8")
    assert tsm("index", "-f", "json").code == 0  # the related notes get vectors
    for name, text in KEYWORD_NOTES.items():
        (indexed / "notes" / name).write_text(text, encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    query = "rotate the deploy keys of the build farm"
    keyword = [r["source"]["path"] for r in search(tsm, query, "--fts-only")["results"]]
    assert keyword[0] == "notes/deploy-keys.md"
    assert {"notes/server-farm.md", "notes/docs-build.md"} <= set(keyword)
    hybrid = search(tsm, query)
    assert any("have no vector yet" in w for w in hybrid["warnings"])
    paths = [r["source"]["path"] for r in hybrid["results"]]
    assert paths[: len(keyword)] == keyword, [
        (r["source"]["path"], r["score_breakdown"]) for r in hybrid["results"]
    ]
    assert "notes/ci-credentials.md" in paths[len(keyword) :]  # found by the vectors, after


RUNBOOK = (
    NEW_NOTE
    + """
The farm itself sits in the basement, next to the old coffee machine and the spare desks.
"""
)


def test_few_hits_embedded_keep_the_keyword_order(vault: Path, tsm: Any) -> None:
    """One or two of the keyword hits have a vector, nine do not: the vectors have measured
    too few of the hits (below fuse.VECTOR_QUORUM) to reorder them, so the keyword hits come
    in exactly the keyword-only order and no vector term counts yet (under the rule before,
    "evidence", the embedded hit's counted). Once all are embedded the full fusion ranks."""
    (vault / "notes" / "runner-credentials.md").write_text(RUNBOOK, encoding="utf-8")
    assert tsm("index", "-f", "json").code == 0  # every note so far has its vector
    for n in range(9):
        (vault / "notes" / f"deploy-keys-{n}.md").write_text(NEW_NOTE, encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    query = "how do we rotate the deploy keys of the build runners"
    keyword = [r["source"]["path"] for r in search(tsm, query, "--fts-only", "-k", "20")["results"]]
    assert "notes/runner-credentials.md" in keyword and len(keyword) <= 12, keyword
    hybrid = search(tsm, query, "-k", "20")
    assert any("have no vector yet" in w for w in hybrid["warnings"])
    hits = [r for r in hybrid["results"] if r["source"]["path"] in keyword]
    assert [r["source"]["path"] for r in hits] == keyword, [
        (r["source"]["path"], r["score_breakdown"]) for r in hits
    ]
    assert all(r["score_breakdown"]["vector"] == 0.0 for r in hits)
    assert tsm("index", "-f", "json").code == 0
    full = search(tsm, query, "-k", "20")
    assert not any("no vector yet" in w for w in full["warnings"])
    assert all(r["score_breakdown"]["vector"] > 0.0 for r in full["results"][:10])
