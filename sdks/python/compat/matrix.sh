#!/usr/bin/env bash
# The compatibility matrix: Queen's published Python client (queen-mq from PyPI, unchanged), one
# virtualenv per release, against a live Regina. Prints a table release × area → outcome and
# writes it to <target>/queen-compat/matrix.md (and one JUnit XML file per release beside it).
#
# Usage: sdks/python/compat/matrix.sh [--ci] [RELEASE...]
#   (no option)  every release of versions.txt (or the RELEASEs given), every test   (make compat)
#   --ci         the newest 0.x release in full, the smoke tests of the others       (make test)
# Without REGINA_URL it runs itself under sdks/run-tests.sh (a throw-away database and broker;
# REGINA_BIN=path/to/regina skips building the broker). Exits non-zero when any test fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [[ -z ${REGINA_URL:-} ]]; then
  exec "$root/sdks/run-tests.sh" "$here/matrix.sh" "$@"
fi

ci=false
if [[ ${1:-} == --ci ]]; then
  ci=true
  shift
fi
releases=("$@")
if [[ ${#releases[@]} == 0 ]]; then
  mapfile -t releases < <(grep -Ev '^\s*(#|$)' "$here/versions.txt")
fi
newest_0x=$(printf '%s\n' "${releases[@]}" | { grep '^0\.' || true; } | sort -V | tail -n 1)

python=${PYTHON:-python3}
out=${CARGO_TARGET_DIR:-$root/target}/queen-compat
mkdir -p "$out"
rm -f "$out"/*.xml "$out"/modes.txt

# A virtualenv without a pip of its own takes a tenth of a second to make instead of about four,
# and this pip installs into it (`pip --python`, pip 22.3 and later): about a minute less for the
# matrix. With an older pip, each virtualenv brings its own.
outer_pip=false
"$python" -m pip --python "$("$python" -c 'import sys; print(sys.executable)')" --version \
  >/dev/null 2>&1 && outer_pip=true

venv() {  # venv RELEASE: the release's own virtualenv, created (or completed) in $out
  local dir=$out/venv-$1
  local install=(install -q --disable-pip-version-check "queen-mq==$1" "pytest>=7.4")
  if [[ $outer_pip == true ]]; then
    [[ -x $dir/bin/python ]] || "$python" -m venv --without-pip "$dir"
    "$python" -m pip --python "$dir/bin/python" "${install[@]}"
  else
    [[ -x $dir/bin/python ]] || "$python" -m venv "$dir"
    "$dir/bin/python" -m pip "${install[@]}"
  fi
}

# Every virtualenv is prepared first, COMPAT_JOBS at a time (pip mostly waits on the index and
# on unpacking), each into its own log; the releases' tests then run one after the other.
export -f venv
export python out outer_pip
printf '%s\n' "${releases[@]}" | xargs -P "${COMPAT_JOBS:-4}" -I{} \
  bash -c 'venv "$1" >"$out/venv-$1.log" 2>&1' _ {} || true

status=0
for release in "${releases[@]}"; do
  mode=full
  [[ $ci == true && $release != "$newest_0x" ]] && mode=smoke
  echo "--- queen-mq $release ($mode) against Regina"
  dir=$out/venv-$release
  if [[ ! -x $dir/bin/pytest ]]; then
    cat "$out/venv-$release.log" >&2
    echo "matrix: the virtualenv of queen-mq $release could not be prepared" >&2
    status=1
    continue
  fi
  select=()
  [[ $mode == smoke ]] && select=(-m smoke)
  echo "$release $mode" >>"$out/modes.txt"
  (cd "$here" && "$dir/bin/pytest" -p no:cacheprovider -c pytest.ini -q -rfEx --tb=short \
    --junitxml="$out/$release.xml" "${select[@]}" .) || status=1
done

"$python" "$here/matrix_report.py" "$out" || status=1
exit $status
