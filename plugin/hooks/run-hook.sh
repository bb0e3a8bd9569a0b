# Run the hook script named by $1 (hooks/$1.py) under the first python3 in an absolute PATH
# entry that lies outside the session's folder. Claude Code runs hooks in the session's
# folder, often a cloned repository: a relative entry (`.`, an empty one such as a trailing
# `:`, `node_modules/.bin`) or an absolute one inside that folder (direnv's `PATH_add`, an
# activated `.venv`) names a folder of the repository, whose own `python3` must never run.
# The home folder and `/` are never taken for a repository, or nothing would be left. `-E`:
# PYTHONPATH and the other PYTHON* settings may point into that repository too.
# Started as `/bin/sh run-hook.sh NAME` (hooks.json), so nothing here is looked up on PATH.
set -f
unset CDPATH  # a relative `cd` must not wander off, nor print where it went

# The folder's physical path in $real, found by entering it: no subshell to fork on every
# prompt. The shell comes back to where it started, so the hook runs where Claude Code put it.
start=$PWD
physical() {
    real=
    cd -P -- "$1" 2>/dev/null || return 1
    real=$PWD
    cd -- "$start" 2>/dev/null || cd -P -- "$start" || exit 0
}

session=
physical . && session=$real
project=
[ -n "${CLAUDE_PROJECT_DIR:-}" ] && physical "$CLAUDE_PROJECT_DIR" && project=$real
home=
[ -n "${HOME:-}" ] && physical "$HOME" && home=$real

in_session() {
    for top in "$session" "$project"; do
        case $top in
            "" | / | "$home") continue ;;
        esac
        case $1/ in
            "$top"/*) return 0 ;;
        esac
    done
    return 1
}

IFS=:
for dir in $PATH; do
    case $dir in
        /*) ;;
        *) continue ;;
    esac
    if [ -f "$dir/python3" ] && [ -x "$dir/python3" ]; then
        physical "$dir" || continue
        in_session "$real" && continue
        exec "$dir/python3" -E "${0%/*}/$1.py"
    fi
done
echo "tsm plugin: no python3 in an absolute PATH entry outside the session's folder to run the $1 hook" >&2
exit 0
