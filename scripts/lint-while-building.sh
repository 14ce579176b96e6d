#!/usr/bin/env bash
# Lints the workspace's own crates while cargo builds them (issue 38,
# `.ci/run` time; docs/performance.md, Run AM; DECISIONS.md "Linting beside
# the build").
#
# Cargo runs `RUSTC_WORKSPACE_WRAPPER RUSTC ARGS…` for every crate of the
# workspace (never for a dependency). This wrapper first runs RUSTC ARGS as
# given — the build is rustc's, byte for byte what it would be without the
# wrapper — and then clippy's driver on the same crate and arguments with
# only its metadata written, into a folder of its own, so clippy's lints run
# on every target the build compiles (libraries, binaries, tests, examples,
# benchmarks, build scripts) without `cargo clippy`'s second pass over
# every dependency in check mode. The lints come from CLIPPY_ARGS, as
# `cargo clippy -- LINTS` passes them (`-D warnings` is
# `-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__`). A lint that fails fails
# the crate's build, and cargo shows it as it shows rustc's errors.
#
# Clippy's driver is not the build's compiler on purpose: it turns MIR
# optimisations off, which grows debug stack frames (a test that pins the
# deepest accepted CEL tree on a 2 MiB stack overflowed when it built the
# test binaries; DECISIONS.md "Linting while building, rejected").
set -uo pipefail

rustc=$1
shift

# Queries (`-vV`, cargo's `--print` of the target's facts) only go to
# rustc.
compiles=""
for a in "$@"; do
  case $a in
    --print | --print=* | -vV | -V | --version) exec "$rustc" "$@" ;;
    --crate-name) compiles=yes ;;
  esac
done
[ -n "$compiles" ] || exec "$rustc" "$@"

"$rustc" "$@" || exit

# The same arguments, but: only the metadata, into a scratch folder (never
# beside the build's own .rmeta, which its dependents read); no incremental
# cache; no artifact notices (cargo would take them for the build's own) and
# no future-incompatibility report (rustc gave it already).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/troupe-lint.XXXXXX") || exit
trap 'rm -rf "$scratch"' EXIT
args=()
while [ $# -gt 0 ]; do
  a=$1
  shift
  case $a in
    --emit=*) args+=(--emit=metadata) ;;
    --out-dir) shift ;;
    --out-dir=*) ;;
    -C)
      case ${1-} in
        incremental=*) ;;
        *) args+=(-C "${1-}") ;;
      esac
      shift
      ;;
    -Cincremental=*) ;;
    --json=*)
      json=$(printf '%s\n' "${a#--json=}" | tr ',' '\n' | grep -v -x -e artifacts -e future-incompat | paste -sd, -)
      [ -z "$json" ] || args+=("--json=$json")
      ;;
    *) args+=("$a") ;;
  esac
done
clippy-driver "$rustc" "${args[@]}" --out-dir "$scratch" || exit

# LINT_BARE_CRATE names a library (`troupe`, the core) linted a second time
# as an embedder builds it with no features: every `--cfg feature="…"`
# dropped, and the `--extern` of each optional dependency named in
# LINT_BARE_OPTIONAL (library names, space-separated), so code that uses
# one without its feature's `cfg` fails as it would in that build. What
# this cannot see: a dependency's own features are the build's, which may
# be more than the bare core's graph enables (docs/DECISIONS.md "One build
# for everything").
[ -n "${LINT_BARE_CRATE-}" ] || exit 0
crate="" test=""
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --crate-name) crate=${args[i + 1]} ;;
    --test) test=yes ;;
  esac
done
[ "$crate" = "$LINT_BARE_CRATE" ] && [ -z "$test" ] || exit 0
bare=()
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]}
  case $a in
    --cfg)
      case ${args[i + 1]} in
        feature=*) i=$((i + 1)); continue ;;
      esac
      ;;
    --extern)
      name=${args[i + 1]%%=*}
      if [[ " ${LINT_BARE_OPTIONAL-} " == *" $name "* ]]; then
        i=$((i + 1))
        continue
      fi
      ;;
  esac
  bare+=("$a")
done
clippy-driver "$rustc" "${bare[@]}" --out-dir "$scratch"
