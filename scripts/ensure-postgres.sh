#!/usr/bin/env bash
# Makes this machine able to build Regina and run its private PostgreSQL clusters: installs the
# Debian `postgresql` package when no `initdb` can be found, and checks that cargo (with rustfmt
# and clippy) is there, installing rustup's minimal toolchain only when cargo is missing.
set -euo pipefail

have_initdb() {
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
  local bindir
  bindir=$(pg_config --bindir 2>/dev/null) && [[ -x $bindir/initdb ]]
}

as_root() {
  if [[ $(id -u) == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "ensure-postgres: need root to run: $*" >&2
    return 1
  fi
}

if ! have_initdb; then
  echo "ensure-postgres: installing the postgresql package" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  have_initdb || { echo "ensure-postgres: initdb still missing after install" >&2; exit 1; }
fi

# The test clusters run as `postgres` when we are root; the package creates that user.
if [[ $(id -u) == 0 ]] && ! id postgres >/dev/null 2>&1; then
  echo "ensure-postgres: the postgres OS user is missing (reinstall the postgresql package)" >&2
  exit 1
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
  echo "ensure-postgres: cargo missing, installing rustup's minimal toolchain" >&2
  curl -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal --component rustfmt,clippy
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi
