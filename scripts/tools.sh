#!/usr/bin/env bash
# Installs (once per machine) and puts on PATH every tool the build and the tests need.
# Sourced by build.sh, test.sh and run.sh. Tools live where they persist on the machine: cargo's bin dir
# for wasm-bindgen-cli, npm's cache for Deno and binaryen, Debian packages for qemu-ga and sshd.

WASM_BINDGEN_VERSION="0.2.129" # must equal the `wasm-bindgen = "=…"` pin in Cargo.toml
PROJECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$PROJECT_ROOT/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export NO_COLOR=1
export DENO_NO_UPDATE_CHECK=1

say() { printf '» %s\n' "$*" >&2; }

ensure_rust_wasm() {
  command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown >&2 || { echo "could not add the wasm32 target (rustup target add wasm32-unknown-unknown)" >&2; exit 1; }
  fi
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 minutes, once per machine)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked >&2
  fi
  ensure_rust_src
}

# The toolchain's std sources, for the size build of the shipped module (build_wasm). Optional: without
# them build_wasm falls back to a larger build, and the size budget test says so.
ensure_rust_src() {
  [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library" ] && return 0
  say "adding the rust-src component (std's sources, to rebuild std for size)"
  rustup component add rust-src >&2 || say "could not add rust-src: the module will be built without rebuilding std"
}

ensure_node_tools() {
  if ! deno --version >/dev/null 2>&1 || ! wasm-opt --version >/dev/null 2>&1; then
    say "installing Deno and binaryen from tools/package-lock.json"
    (cd "$PROJECT_ROOT/tools" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
}

ensure_apt() { # ensure_apt <command> <package>
  command -v "$1" >/dev/null && return 0
  say "installing Debian package $2"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq >&2; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
}

ensure_test_services() {
  ensure_apt qemu-ga qemu-guest-agent
  # Absolute paths: /usr/sbin is not on every user's PATH; tests/ssh runs the node-side pvesh
  # fixture with Debian's /usr/bin/python3 (a pyenv shim would not work inside an sshd session).
  ensure_apt /usr/sbin/sshd openssh-server
  ensure_apt ssh openssh-client
  ensure_apt /usr/bin/python3 python3
  ensure_apt openssl openssl # the TLS tests make their own CA
}

# build_wasm <cargo target dir> <out dir>: the core for wasm32, through wasm-bindgen and wasm-opt -Oz; leaves
# <out dir>/proxmox_core.js (the glue) and <out dir>/proxmox_core.opt.wasm (the module that ships).
# PROXMOX_CORE_OMIT (comma-separated method names), when set, builds the core without those methods: the size
# bench weighs a method by the difference (src/catalog.rs `omitted`).
#
# The shipped module is built for size beyond what the release profile can ask (issue 32):
# - std itself is rebuilt (-Zbuild-std) with its `optimize_for_size` feature (its smaller sorts
#   and collections) and panic = "immediate-abort": a panic traps at once, with no formatting
#   machinery behind it. On wasm32-unknown-unknown a panic prints nothing anyway, and the core
#   has no panic reachable from input (the fuzz and bounds tests).
# - -Zlocation-detail=none drops the file, line and column of every panic site.
# These flags are unstable: RUSTC_BOOTSTRAP=1 lets the machine's stable toolchain take them, in
# this build only (tests, clippy and the native build use none of them). Rebuilding std needs
# the toolchain's rust-src component (`ensure_rust_src`). Whatever a toolchain refuses, the build
# falls back a step — the core crate alone with -Zlocation-detail=none, then a plain release
# build — says so, and the size budget test judges the result.
build_wasm() {
  local target_dir=$1 out=$2 wasm
  wasm="$target_dir/wasm32-unknown-unknown/release/proxmox_core.wasm"
  if ! RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$target_dir \
    RUSTFLAGS="-Zlocation-detail=none -Zunstable-options -Cpanic=immediate-abort" \
    cargo build --quiet --release --lib --target wasm32-unknown-unknown \
    -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size 2>/dev/null; then
    echo "build_wasm: rebuilding std for size failed (is rust-src installed?); building without it" >&2
    if ! RUSTC_BOOTSTRAP=proxmox_core CARGO_TARGET_DIR=$target_dir cargo rustc --quiet --release \
      --lib --target wasm32-unknown-unknown -- -Zlocation-detail=none 2>/dev/null; then
      echo "build_wasm: the build with -Zlocation-detail=none failed; building without it" >&2
      CARGO_TARGET_DIR=$target_dir cargo build --quiet --release --lib --target wasm32-unknown-unknown ||
        return 1
    fi
  fi
  rm -rf "$out" && mkdir -p "$out"
  wasm-bindgen --target web --out-dir "$out" --out-name proxmox_core \
    "$wasm" || return 1
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$out/proxmox_core_bg.wasm" -o "$out/proxmox_core.opt.wasm"
}
