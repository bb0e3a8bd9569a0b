#!/usr/bin/env bash
# The fusion property tests' cost in two checkouts, alternated: wall and CPU seconds of one
# pytest process running tests/search/test_fusion_properties.py, and the load beside each.
#   bench/fusion_properties_cost.sh OLD_DIR NEW_DIR [ROUNDS]
# Both run with NEW_DIR's venv, each on its own src/ (PYTHONPATH).
set -u
old=$1 new=$2 rounds=${3:-2}
py="$new/.venv/bin/python"
echo "| round | checkout | load before | wall s | user s | sys s | dominance s | bridge invariance s | load after |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$rounds"); do
  for side in old new; do
    dir=$old; [ "$side" = new ] && dir=$new
    before=$(cut -d' ' -f1 /proc/loadavg)
    out=$(cd "$dir" && PYTHONPATH="$dir/src" /usr/bin/time -f "TIME %e %U %S" "$py" -m pytest -q -n 0 \
      -p no:cacheprovider tests/search/test_fusion_properties.py --durations=3 2>&1)
    read -r wall user sys <<<"$(echo "$out" | sed -n 's/^TIME //p')"
    calls=$(echo "$out" | awk '/s call/ {print $1}' | tr '\n' ' ')
    read -r dominance bridge _ <<<"$calls"
    echo "| $round | $side | $before | $wall | $user | $sys | ${dominance%s} | ${bridge%s} | $(cut -d' ' -f1 /proc/loadavg) |"
  done
done
