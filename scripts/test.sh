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

# cpu_ticks prints the machine's busy and total CPU ticks since boot
# (/proc/stat's first line; idle and iowait are not busy).
cpu_ticks() {
  awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat 2>/dev/null || echo "0 0"
}

phase() {
  local name=$1
  shift
  local t0=$SECONDS
  local b0 a0 b1 a1
  read -r b0 a0 < <(cpu_ticks)
  echo "==> make test: $name"
  "$@"
  local rc=$?
  read -r b1 a1 < <(cpu_ticks)
  # How busy the machine's CPUs were during the phase: near 100 % means
  # the phase is CPU-bound, and more test packages at once would not help.
  local busy=-1
  if [ "$a1" -gt "$a0" ]; then busy=$(((b1 - b0) * 100 / (a1 - a0))); fi
  printf '%s\t%d\t%d\t%d\n' "$name" $((SECONDS - t0)) "$rc" "$busy" >>"$table"
  return $rc
}

report() {
  local rc=$?
  echo
  echo "make test: phases (wall seconds, CPU busy on all $(nproc) cores; the whole run took $((SECONDS - start)) s)"
  awk -F'\t' '{ printf "  %-44s %6d s  %4s  %s\n", $1, $2, ($4 < 0 ? "?" : $4 "%"), ($3 == 0 ? "ok" : "FAILED (exit " $3 ")") }' "$table"
  if [ -s "$log" ]; then
    echo "slowest test packages (seconds each, run ${TEST_P:-?} at a time):"
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
# lint has vetted every package: the tests do not vet them again (TEST_VET).
phase "acceptance (every package, TF_ACC=1)" bash -c "set -o pipefail; make -s acceptance TEST_VET=off 2>&1 | tee -a $log" || exit
phase "acceptance under tofu (internal/resources/kueue)" bash -c "set -o pipefail; make -s acceptance-tofu TEST_VET=off 2>&1 | tee -a $log" || exit
