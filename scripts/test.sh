#!/usr/bin/env bash
# `make test`: the phases in order, each timed, and at the end — pass or fail —
# a table of the phases and of the slowest test packages, so every CI log
# shows where its minutes went. The phases are the Makefile's own targets.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
log=bin/test-acceptance.log
table=bin/test-phases.tsv
: >"$table"
: >"$log"
start=$SECONDS

phase() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "==> make test: $name"
  "$@"
  local rc=$?
  printf '%s\t%d\t%d\n' "$name" $((SECONDS - t0)) "$rc" >>"$table"
  return $rc
}

report() {
  local rc=$?
  echo
  echo "make test: phases (wall seconds; the whole run took $((SECONDS - start)) s)"
  awk -F'\t' '{ printf "  %-44s %6d s  %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED (exit " $3 ")") }' "$table"
  if [ -s "$log" ]; then
    echo "slowest test packages (seconds each, run two at a time):"
    awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); sub(/.*terraform-provider-aiplatform\/?/, "./", $2); printf "%10.1f  %s %s\n", $3, $2, ($1 == "FAIL" ? "FAIL" : "") }' "$log" |
      sort -rn | head -12 | sed 's/^/  /'
  fi
  exit $rc
}
trap report EXIT

phase "lint (gofmt, go vet, terraform fmt)" make -s lint || exit
phase "docs-check" make -s docs-check || exit
phase "fuzz" make -s fuzz || exit
phase "binaries (control plane, controllers, tofu)" make -s binaries || exit
phase "goreleaser" make -s goreleaser || exit
phase "acceptance (every package, TF_ACC=1)" bash -c "set -o pipefail; make -s acceptance 2>&1 | tee -a $log" || exit
phase "acceptance under tofu (internal/resources/kueue)" bash -c "set -o pipefail; make -s acceptance-tofu 2>&1 | tee -a $log" || exit
