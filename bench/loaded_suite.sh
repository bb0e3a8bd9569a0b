#!/usr/bin/env bash
# The whole suite on a busy machine, as a fresh clone runs it: RUNS runs in a row of
# `CI=true bash .ci/run` in a new clone of COMMIT, each beside LOOPS `yes > /dev/null`
# loops, the load average logged every minute. Prints each run's legs and wall time.
#   bash bench/loaded_suite.sh COMMIT [RUNS=3] [LOOPS=2] [WORKDIR=/tmp/tsm-loaded-suite]
# The runs may be a background job (`setsid nohup … &`): a job's SIGINT is then ignored,
# and the suite's Ctrl-C test gives its own run the terminal's.
set -uo pipefail
commit=$1 runs=${2:-3} loops=${3:-2} work=${4:-/tmp/tsm-loaded-suite}
repo=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repo/.." && pwd)/shared
rm -rf "$work" && mkdir -p "$work"
[ -d "$shared" ] && ln -s "$shared" "$work/shared"  # the datasets the suite reads (../shared)
git clone -q "$repo" "$work/tsm" && git -C "$work/tsm" checkout -q "$commit" || exit 1
echo "$(git -C "$work/tsm" log --oneline -1), $runs runs beside $loops busy loops"
failed=0
for run in $(seq "$runs"); do
    git -C "$work/tsm" clean -qfdx  # each run from a fresh tree: no venv, no caches
    pids=()
    for _ in $(seq "$loops"); do yes > /dev/null & pids+=($!); done
    (while sleep 60; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done) \
        > "$work/load-$run.log" &
    logger=$!
    started=$(date -u +%T) t0=$SECONDS
    (cd "$work/tsm" && CI=true bash .ci/run > "$work/run-$run.log" 2>&1)
    rc=$?
    kill "${pids[@]}" "$logger"
    loads=$(cut -d' ' -f2 "$work/load-$run.log" | sort -n | sed -n '1p;$p' | paste -sd-)
    echo "run $run: exit $rc, $(( (SECONDS - t0) / 60 )) min from $started UTC," \
        "1-min load ${loads:-?}"
    grep -E '^ +(passed|FAILED|skipped) ' "$work/run-$run.log" | sed 's/^/    /'
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
done
echo "$failed of $runs runs failed; logs in $work"
exit "$failed"
