# Run the hook script named by $1 (hooks/$1.py) under the first python3 in an absolute PATH
# entry. Claude Code runs hooks in the session's folder, often a cloned repository: a
# relative entry (`.`, an empty one such as a trailing `:`, `node_modules/.bin`) names a
# folder of that repository, whose own `python3` must never run. Started as
# `/bin/sh run-hook.sh NAME` (hooks.json), so nothing here is looked up on PATH either.
set -f
IFS=:
for dir in $PATH; do
    case $dir in
        /*) ;;
        *) continue ;;
    esac
    if [ -f "$dir/python3" ] && [ -x "$dir/python3" ]; then
        exec "$dir/python3" "${0%/*}/$1.py"
    fi
done
echo "tsm plugin: no python3 in an absolute PATH entry to run the $1 hook" >&2
exit 0
