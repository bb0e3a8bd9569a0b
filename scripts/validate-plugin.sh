#!/usr/bin/env bash
# Validate the Claude Code plugin and the marketplace manifest with the real Claude Code CLI,
# in --strict mode (warnings fail), as CONTRACT.md requires. The CLI is installed once into a
# cache outside the source tree (override with TSM_CLAUDE_CLI_DIR) and runs offline.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TSM_CLAUDE_CLI_DIR:-"$HOME/.cache/tsm-claude-cli"}
claude="$cache/node_modules/.bin/claude"

if ! "$claude" --version >/dev/null 2>&1; then
  command -v npm >/dev/null 2>&1 || { echo "validate-plugin: npm is required" >&2; exit 2; }
  echo "validate-plugin: installing @anthropic-ai/claude-code into $cache" >&2
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code >&2
  "$claude" --version >/dev/null
fi
echo "validate-plugin: $("$claude" --version)" >&2

status=0
for target in "$repo/plugin" "$repo"; do
  if ! "$claude" plugin validate --strict "$target"; then
    status=1
  fi
done
exit "$status"
