#!/usr/bin/env bash
# bench/pg_team_server.py served by two source trees alternately (A, B, A, B …) on the same
# kept corpus and indexes (--workdir), with the machine's load beside every run: a shared,
# busy machine compares only side by side. Each tree's `src` comes first on PYTHONPATH, so
# `tsm mcp` runs that tree's code; the indexes are built once, by the first run.
#   bash bench/pg_team_server_ab.sh A_DIR B_DIR ROUNDS WORKDIR OUT_PREFIX [ARGS…]
#   bash bench/pg_team_server_ab.sh ../base-pgperf . 2 /tmp/team-10k \
#       bench/results/pg_team_server-10k-1client-ab --chunks 10000 --clients 1 \
#       --seconds 20 --warmup 3 --pg-url "$(scripts/postgres url DIR)"
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) rounds=$3 workdir=$4 out=$5
shift 5
for round in $(seq "$rounds"); do
    for side in A B; do
        dir=$a
        [ "$side" = B ] && dir=$b
        echo "== round $round: $side $dir ($(git -C "$dir" log --oneline -1 | cut -c1-7))," \
            "load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
        PYTHONPATH="$dir/src" "$here/.venv/bin/python" "$here/bench/pg_team_server.py" \
            --workdir "$workdir" --out "$out-$side$round" "$@" | grep -E "served|indexed"
    done
done
echo "== done, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
