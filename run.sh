#!/usr/bin/env bash
# The main job: runs a method like `swamp model method run`, on the embedded simulator by default.
# Usage: ./run.sh [<method>] [--input key=value]… (see cli/run.ts, or ./run.sh --help)
set -euo pipefail
source "$(dirname "$0")/scripts/tools.sh"
cd "$PROJECT_ROOT"
[ -f js/_lib/generated/proxmox_core.wasm ] || ./build.sh
# deno comes from tools/ (a built tree whose tools were removed still gets them back).
ensure_node_tools
exec deno run --allow-all cli/run.ts "$@"
