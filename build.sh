#!/usr/bin/env bash
# Builds the Rust core to wasm and stages it in the swamp package (js/_lib/generated/).
set -euo pipefail
source "$(dirname "$0")/scripts/tools.sh"
cd "$PROJECT_ROOT"
ensure_rust_wasm
ensure_node_tools

# One build at a time in this tree (parallel builds would clobber target/wasm-bindgen).
mkdir -p target && exec 9>target/.build.lock && flock 9

say "compiling the core for wasm32"
cargo build --quiet --release --lib --target wasm32-unknown-unknown
out=target/wasm-bindgen
rm -rf "$out" && mkdir -p "$out"
wasm-bindgen --target web --out-dir "$out" --out-name proxmox_core \
  target/wasm32-unknown-unknown/release/proxmox_core.wasm
say "optimising with wasm-opt -Oz"
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$out/proxmox_core_bg.wasm" -o "$out/proxmox_core.opt.wasm"
deno run --quiet --allow-read=. --allow-write=js/_lib/generated scripts/stage_wasm.ts \
  "$out/proxmox_core.js" "$out/proxmox_core.opt.wasm" js/_lib/generated
raw=$(stat -c %s "$out/proxmox_core_bg.wasm")
opt=$(stat -c %s "$out/proxmox_core.opt.wasm")
gz=$(gzip -9 -c "$out/proxmox_core.opt.wasm" | wc -c)
echo "wasm: ${opt} bytes shipped after wasm-opt (${gz} gzip; ${raw} before wasm-opt; goal ≤ 256000)"
