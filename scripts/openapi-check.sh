#!/usr/bin/env bash
# Validates an OpenAPI document against the OpenAPI 3.1 schema with openapi-spec-validator,
# installed once into a virtualenv under target/. A deliberately broken copy must fail too, so a
# validator that accepts anything cannot pass unnoticed.
#
# Usage: scripts/openapi-check.sh api/openapi.json
set -euo pipefail

document=${1:?usage: openapi-check.sh DOCUMENT}
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CARGO_TARGET_DIR:-$root/target}/openapi-venv
python=${PYTHON:-python3}
validator_version=0.7.2

installed=$venv/.openapi-spec-validator-$validator_version
if [[ ! -e $installed ]]; then
  [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "openapi-spec-validator==$validator_version"
  touch "$installed"
fi

"$venv/bin/openapi-spec-validator" --schema 3.1.0 "$document"

broken=$(mktemp)
trap 'rm -f "$broken"' EXIT
"$venv/bin/python" - "$document" "$broken" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
# A document whose info has no title, and whose path parameter is optional, is invalid.
del doc["info"]["title"]
for item in doc["paths"].values():
    for operation in item.values():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                parameter["required"] = False
json.dump(doc, open(sys.argv[2], "w"))
PY
if "$venv/bin/openapi-spec-validator" --schema 3.1.0 "$broken" >/dev/null 2>&1; then
  echo "openapi-check: the validator accepted an invalid document" >&2
  exit 1
fi
echo "openapi-check: $document is valid OpenAPI 3.1"
