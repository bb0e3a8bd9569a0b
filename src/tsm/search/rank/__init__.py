"""Ranking: pure functions over what the signals read, parameterised by one RankingParams.
Nothing here reads the store (the import contract in pyproject.toml says so)."""
