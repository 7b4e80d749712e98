#!/usr/bin/env bash
# The Go SDK's test entry point: checks formatting and vet, then runs the unit tests and — against
# a throw-away PostgreSQL and broker started by ../run-tests.sh — the integration tests, the shared
# conformance scenarios and the README samples. Exits non-zero on any failure.
#
#   REGINA_BIN  prebuilt broker binary (default: ../run-tests.sh builds it with cargo)
#   GO_TEST_FLAGS  extra flags for go test (for example "-run Conformance")
set -euo pipefail
cd "$(dirname "$0")"

# The SDK uses the standard library only: a Go toolchain is all it needs.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH=/usr/local/go/bin:$PATH
fi
if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: installing Go from the distribution's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
if ! go list -m >/dev/null 2>&1; then
  echo "test.sh: $(go version) cannot build this module (it needs Go 1.22 or newer)" >&2
  exit 1
fi

unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
  echo "test.sh: not gofmt-formatted:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...

flags=(-count=1 -timeout=5m)
# The race detector needs cgo and a C compiler.
if [[ $(go env CGO_ENABLED) == 1 ]] && command -v "$(go env CC)" >/dev/null 2>&1; then
  flags+=(-race)
fi
# shellcheck disable=SC2206
flags+=(${GO_TEST_FLAGS:-})

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
../run-tests.sh go test "${flags[@]}" -v ./... >"$log" 2>&1 || status=$?

# Failures in full, then one line per test and the totals.
if [[ $status != 0 ]]; then
  grep -vE '^(=== (RUN|PAUSE|CONT)|--- (PASS|SKIP))' "$log" || true
  echo
fi
grep -E '^\s*--- (PASS|FAIL|SKIP)' "$log" || true
grep -E '^(ok|FAIL|PASS)\s' "$log" || true
passed=$(grep -cE '^\s*--- PASS' "$log" || true)
failed=$(grep -cE '^\s*--- FAIL' "$log" || true)
skipped=$(grep -cE '^\s*--- SKIP' "$log" || true)
echo "go sdk: $passed passed, $failed failed, $skipped skipped (subtests included)"
exit "$status"
