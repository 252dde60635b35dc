#!/bin/sh
# generated_test.sh SERVER PYTHON3 SOURCE WORK
#   Regenerates the generated blocks into WORK/out from `SERVER dump-schema` and fails, naming each
#   file and showing the diff, when a committed file differs: run make generate.
# generated_test.sh --refusals SERVER PYTHON3 SOURCE WORK
#   The generator refuses a target without its markers and a document that is not a schema, each
#   with one line, and writes nothing; dump-schema refuses an argument.
set -eu
refusals=0
if [ "$1" = "--refusals" ]; then refusals=1; shift; fi
server=$1 python=$2 src=$3 work=$4
gen="$src/tools/gen-docs/gen_docs.py"
rm -rf "$work"
mkdir -p "$work/out"
"$server" dump-schema > "$work/schema.json"

if [ "$refusals" = 1 ]; then
  # A copy of the sources with one marker gone.
  mkdir -p "$work/src"
  (cd "$src" && tar cf - docs helm/nccl-triage/README.md helm/nccl-triage/values.yaml \
    helm/nccl-triage/values.schema.json) | (cd "$work/src" && tar xf -)
  sed -i '/^<!-- \/generated:host-checks -->$/d' "$work/src/docs/checks.md"
  if "$python" "$gen" --schema "$work/schema.json" --source "$work/src" --out "$work/out" \
      2> "$work/err"; then
    echo "FAIL: the generator accepted docs/checks.md without its end marker"; exit 1
  fi
  grep -q 'docs/checks.md: no <!-- generated:host-checks' "$work/err" || {
    echo "FAIL: unexpected message:"; cat "$work/err"; exit 1; }
  echo '{"schema": "something/else"}' > "$work/other.json"
  if "$python" "$gen" --schema "$work/other.json" --source "$src" --out "$work/out" \
      2> "$work/err"; then
    echo "FAIL: the generator accepted a document that is not a schema"; exit 1
  fi
  grep -q 'not an nccl-triage/schema/v1 document' "$work/err" || {
    echo "FAIL: unexpected message:"; cat "$work/err"; exit 1; }
  [ -z "$(find "$work/out" -type f)" ] || { echo "FAIL: files written after a refusal"; exit 1; }
  # dump-schema itself: a stray argument is a usage error, one line, no document.
  if "$server" dump-schema extra > "$work/out.json" 2> "$work/err"; then
    echo "FAIL: dump-schema accepted an argument"; exit 1
  fi
  [ ! -s "$work/out.json" ] && [ "$(wc -l < "$work/err")" = 1 ] || {
    echo "FAIL: dump-schema extra:"; cat "$work/err"; exit 1; }
  echo "generator: refusals as expected"
  exit 0
fi

"$python" "$gen" --schema "$work/schema.json" --source "$src" --out "$work/out"
files=$(cd "$work/out" && find . -type f | sort)
[ -n "$files" ] || { echo "FAIL: the generator wrote nothing"; exit 1; }
stale=""
for f in $files; do
  if ! diff -u "$src/$f" "$work/out/$f"; then stale="$stale ${f#./}"; fi
done
if [ -n "$stale" ]; then
  echo "FAIL: not what the code declares:$stale"
  echo "run make generate (and commit the result)"
  exit 1
fi
echo "generated blocks up to date:" $files
