#!/usr/bin/env bash
# make demo: a local GPU cluster and a real `terraform apply` of the quickstart
# platform on it, then the drift check a GitOps pipeline runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
dir=${TESTENV_DIR:-$repo/.testenv}
terraform=${TERRAFORM:-$(command -v terraform || true)}
[ -n "$terraform" ] || { echo "terraform is not on PATH" >&2; exit 1; }
testenv() { go run ./internal/testenv/cmd/testenv "$@"; }
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "Local GPU cluster: etcd, kube-apiserver, controller-manager, scheduler, kwok (3 nodes x 8 H100), Kueue's chart (its manager run by the pod runner)"
if ! testenv up --kueue; then
  echo "(restarting the running cluster with Kueue's chart)"
  testenv down && testenv up --kueue
fi
kubeconfig=$dir/kubeconfig

# Terraform uses the provider just built (bin/), no registry needed.
cat > "$dir/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "aiplatform/aiplatform" = "$repo/bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE=$dir/terraformrc TF_IN_AUTOMATION=1
work=$dir/demo/quickstart
rm -rf "$work" && mkdir -p "$work" && cp examples/quickstart/*.tf "$work/"
tf() { "$terraform" -chdir="$work" "$@" -input=false -no-color -var "kubeconfig=$kubeconfig"; }

step "terraform apply examples/quickstart"
tf apply -auto-approve 2>&1 | grep -v -e '^│' -e '^╷' -e '^╵' -e '^$' || true
test -s "$work/terraform.tfstate" || { echo "apply failed" >&2; exit 1; }

step "terraform plan -detailed-exitcode (exit 0: the cluster matches the code; 2: drift)"
set +e
tf plan -detailed-exitcode >"$work/plan.log" 2>&1
code=$?
set -e
grep -e 'No changes' -e 'Plan:' "$work/plan.log" || cat "$work/plan.log"
echo "exit code: $code"
[ "$code" -eq 0 ] || exit 1

step "The walkthrough, judged by the real Kueue manager: quota 1 GPU, two 1-GPU Jobs"
testenv walkthrough

step "kubectl get clusterqueue,localqueue -A"
if command -v kubectl >/dev/null; then
  KUBECONFIG=$kubeconfig kubectl get clusterqueue,localqueue -A
else
  testenv queues
fi

printf '\nThe cluster keeps running: export KUBECONFIG=%s\n' "$kubeconfig"
printf 'State and config of the demo: %s. Stop the cluster with: make cluster-down\n' "$work"
