#!/usr/bin/env bash
# Run one bench in two checkouts alternately (A, B, A, B …), each with its own .venv, and
# print the machine's load beside every run: a shared, busy machine compares only side by side.
#   bash bench/paired.sh A_DIR B_DIR ROUNDS BENCH [ARGS…]
#   bash bench/paired.sh ../base . 2 bench/hook_latency.py --notes 2000 --runs 30
set -euo pipefail
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) rounds=$3
shift 3
for round in $(seq "$rounds"); do
    for dir in "$a" "$b"; do
        echo "== round $round: $dir ($(git -C "$dir" log --oneline -1 | cut -c1-7))," \
            "load $(cut -d' ' -f1-3 /proc/loadavg)"
        (cd "$dir" && .venv/bin/python "$@")
    done
done
echo "== done, load $(cut -d' ' -f1-3 /proc/loadavg)"
