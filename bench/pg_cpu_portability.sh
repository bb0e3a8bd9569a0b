#!/usr/bin/env bash
# Does each packaged PostgreSQL + pgvector that scripts/postgres may use run on an x86-64
# CPU without AVX-512? Runs each server's own `postgres --single` under qemu-user emulating a
# Haswell CPU (AVX2 and FMA, no AVX-512), computes a cosine distance and builds an HNSW
# index. Needs root (the server runs as tsm-postgres) and Debian's qemu-user.
#   bash bench/pg_cpu_portability.sh > bench/results/pg-cpu-portability.md
set -euo pipefail
cd "$(dirname "$0")/.."
command -v qemu-x86_64 >/dev/null || { echo "needs qemu-user (apt-get install qemu-user)" >&2; exit 2; }
id tsm-postgres >/dev/null 2>&1 || { echo "needs the tsm-postgres user: run scripts/postgres start once as root" >&2; exit 2; }
search=$(echo .venv/lib/python3*/site-packages/pgserver/pginstall/bin)
generic=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "scripts"); import postgres; print(postgres.generic_bin())')
sql="CREATE EXTENSION vector;
SELECT '[1,2,3]'::vector <=> '[3,2,1]'::vector AS cosine;
CREATE TABLE t AS SELECT i, ARRAY(SELECT random()::real FROM generate_series(1, 384) WHERE i > 0)::vector(384) AS v FROM generate_series(1, 300) i;
CREATE INDEX ON t USING hnsw (v vector_cosine_ops);
SELECT count(*) AS built FROM t;"
echo "| server | under qemu-x86_64 -cpu Haswell | exit |"
echo "|---|---|---:|"
for bin in "$search" "$generic"; do
    dir=$(mktemp -d)
    chown tsm-postgres "$dir"
    runuser -u tsm-postgres -- "$bin/initdb" -D "$dir/data" -U tsm --no-sync >/dev/null
    set +e
    out=$(printf '%s\n' "$sql" | timeout 600 runuser -u tsm-postgres -- \
        qemu-x86_64 -cpu Haswell "$bin/postgres" --single -D "$dir/data" postgres 2>&1)
    status=$?
    set -e
    if grep -q 'built = "300"' <<<"$out"; then what="cosine and HNSW build done"
    elif grep -q 'Illegal instruction' <<<"$out"; then what="SIGILL (Illegal instruction)"
    else what="failed: $(grep -m1 -E 'ERROR|FATAL' <<<"$out")"; fi
    version=$("$bin/postgres" --version)
    vector=$(grep default_version "$bin/../share/postgresql/extension/vector.control" | cut -d"'" -f2)
    echo "| ${version#postgres } + pgvector $vector | $what | $status |"
    rm -rf "$dir"
done
