#!/usr/bin/env bash
# Tests of the Python SDK: lint and types, unit tests, the conformance scenarios and behaviour tests
# against a live broker (started and stopped by ../run-tests.sh), then the compatibility matrix of
# Queen's published client (queen-mq from PyPI) against the same broker: the newest 0.x release in
# full and the smoke tests of the others, each release in its own virtualenv (compat/matrix.sh
# --ci; `make compat` runs the whole matrix).
#
# Usage: sdks/python/test.sh            (REGINA_BIN=path/to/regina skips building the broker)
# The SDK's tests run on PYTEST_WORKERS parallel workers (pytest-xdist, default 4: most of their
# time is spent waiting on leases, windows and long polls); every test uses its own queues.
# Exits non-zero when anything fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
python=${PYTHON:-python3}

venv() {  # venv DIR REQUIREMENT...: create DIR once, then install what is missing
  local dir=$1
  shift
  [[ -x $dir/bin/python ]] || "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@"
}

venv .venv -e ".[test]"

echo "--- ruff, mypy --strict, the blocking client generated from the asyncio one"
.venv/bin/ruff check src tests compat scripts
.venv/bin/ruff format --check src tests compat scripts
.venv/bin/mypy
.venv/bin/python scripts/generate_sync.py --check

status=0
# One broker for both suites; each suite prints its own summary and both always run.
../run-tests.sh bash -c '
  status=0
  echo "--- regina SDK: unit, conformance and behaviour tests"
  .venv/bin/pytest -q -p no:cacheprovider --tb=short -n "${PYTEST_WORKERS:-4}" tests || status=1
  echo "--- queen-mq releases against Regina (compatibility matrix, --ci)"
  compat/matrix.sh --ci || status=1
  exit $status
' || status=$?
exit $status
