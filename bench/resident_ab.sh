#!/usr/bin/env bash
# bench/resident_memory.py for two checkouts' code run by the same venvs, alternated (A, B
# per venv, round by round), the load beside each run. One venv runs either checkout's code
# through PYTHONPATH (its editable install comes after it), so A and B meet the same page
# cache: a venv pip has just installed maps more of each file than a long-lived one
# (bench/results/resident-fresh.md).
#   bash bench/resident_ab.sh A_DIR B_DIR ROOT ROUNDS VENV_PYTHON... [-- BENCH ARGS…]
#   bash bench/resident_ab.sh ../base . /tmp/tsmrm…/v 2 /tmp/fresh/bin/python .venv/bin/python
set -euo pipefail
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) root=$3 rounds=$4
shift 4
pythons=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do pythons+=("$1"); shift; done
[ $# -gt 0 ] && shift
bench=$(cd "$(dirname "$0")" && pwd)/resident_memory.py
for round in $(seq "$rounds"); do
    for py in "${pythons[@]}"; do
        for dir in "$a" "$b"; do
            echo "== round $round: $dir ($(git -C "$dir" log --oneline -1 | cut -c1-7))," \
                "python $py, $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
            PYTHONPATH="$dir/src" "$py" "$bench" --root "$root" --queries 0 "$@"
        done
    done
done
echo "== done $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
