#!/usr/bin/env bash
# Builds the Rust core to wasm and stages it in the swamp package (js/_lib/generated/).
set -euo pipefail
source "$(dirname "$0")/scripts/tools.sh"
cd "$PROJECT_ROOT"
ensure_rust_wasm
ensure_node_tools

# One build at a time in this tree (parallel builds would clobber target/wasm-bindgen).
mkdir -p target && exec 9>target/.build.lock && flock 9

say "compiling the core for wasm32 (then wasm-opt -Oz)"
out=target/wasm-bindgen
build_wasm target "$out"
deno run --quiet --allow-read=. --allow-write=js/_lib/generated scripts/stage_wasm.ts \
  "$out/proxmox_core.js" "$out/proxmox_core.opt.wasm" js/_lib/generated
raw=$(stat -c %s "$out/proxmox_core_bg.wasm")
opt=$(stat -c %s "$out/proxmox_core.opt.wasm")
gz=$(gzip -9 -c "$out/proxmox_core.opt.wasm" | wc -c)
budget=$(deno eval --quiet 'import b from "./size_budget.json" with { type: "json" }; console.log(b.wasmBytes)')
echo "wasm: ${opt} bytes shipped after wasm-opt (${gz} gzip; ${raw} before wasm-opt; budget ${budget}, size_budget.json)"
