"""The values a search ranks by, in one frozen value carried by the search context: the
engine builds it from the settings, and a benchmark builds variants of it
(`dataclasses.replace`) instead of changing module constants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...config import Settings
from .. import fuse


@dataclass(frozen=True)
class Folder:
    """A content folder's ranking (tsm.toml's [[content_dirs]])."""

    path: str
    weight: float
    half_life_days: float | None


@dataclass(frozen=True)
class RankingParams:
    """Fusion (fuse.py), the rule for keyword hits without a vector yet
    (rank/missing.py), and the score multipliers (rank/multipliers.py)."""

    rrf_k: int = 1000
    keyword_parity: float = fuse.KEYWORD_PARITY
    bridge_weight: float = fuse.BRIDGE_WEIGHT
    bridge_parity: float = fuse.BRIDGE_PARITY
    synonym_weight: float = fuse.SYNONYM_WEIGHT
    missing_vector: str = fuse.MISSING_VECTOR
    vector_quorum: float = fuse.VECTOR_QUORUM
    fit_prior: int = fuse.FIT_PRIOR
    half_life_days: float | None = None
    category_half_life: Mapping[str, float] = field(
        default_factory=lambda: {"daily": 90.0, "journal": 90.0}
    )
    folders: tuple[Folder, ...] = ()
    sessions_weight: float = 1.0
    sessions_half_life_days: float | None = None
    status_weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.missing_vector not in fuse.MISSING_VECTOR_RULES:
            raise ValueError(
                f"missing_vector={self.missing_vector!r}: one of {fuse.MISSING_VECTOR_RULES}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> RankingParams:
        return cls(
            rrf_k=settings.get("search.rrf_k"),
            keyword_parity=settings.get("search.keyword_parity"),
            half_life_days=settings.get("ranking.half_life_days"),
            folders=tuple(
                Folder(d.path, d.weight, d.half_life_days) for d in settings.content_dirs
            ),
            sessions_weight=settings.get("sessions.weight"),
            sessions_half_life_days=settings.get("sessions.half_life_days"),
            status_weights=dict(settings.status_weights),
        )
