package helm

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/manifests"
)

// MPIOperator names the MPI Operator's installs (aiplatform_mpi_operator,
// from its manifests, not a chart) in the conflict rules.
var MPIOperator = catalog.MPIOperator.Name

// mpiJobControllers: one controller per cluster may reconcile MPIJobs
// (kubeflow.org). Two MPI Operators both create a launcher and workers for
// every MPIJob (two launchers per job, each with its own hostfile), and the
// Kubeflow training-operator v1 with its MPIJob controller on (its default:
// no --enable-scheme flag enables every kind) does the same to the v1 API
// — and its CRD's stored version v1 makes the API server refuse the MPI
// Operator's CRD, which serves v2beta1 only.
var mpiJobControllers = Rule{
	Charts: []string{MPIOperator},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		var evidence []string
		for _, p := range ofChart(planned, MPIOperator) {
			if p.Namespace != in.Namespace {
				evidence = append(evidence, fmt.Sprintf("aiplatform_mpi_operator in namespace %s is planned in this configuration for the same cluster", p.Namespace))
			}
		}
		live, err := LiveMPIJobControllers(ctx, c)
		if err != nil {
			return nil, err
		}
		training := false
		for _, l := range live {
			switch {
			case l.Chart == MPIOperator && (l.ID() == in.ID() || l.ID() == in.Replaces):
				continue // this install itself, or the one it replaces
			case l.Chart == MPIOperator && isPlannedIn(planned, l.Namespace):
				continue // listed above, as planned
			case l.Chart == TrainingOperator:
				training = true
			}
			evidence = append(evidence, fmt.Sprintf("the %s in namespace %s (%s)", l.Chart, l.Namespace, l.Found))
		}
		if len(evidence) == 0 {
			return nil, nil
		}
		detail := fmt.Sprintf("aiplatform_mpi_operator in namespace %s would reconcile MPIJobs (kubeflow.org), and so would:\n  - %s\n\n"+
			"Two controllers of one MPIJob each create its launcher and workers (two launchers per job, each with its own hostfile), "+
			"and the MPI Operator's cluster-wide objects (the CRD %s, ClusterRole and ClusterRoleBinding mpi-operator) have fixed names, "+
			"so one cluster holds one MPI Operator.\n\nFix: keep one aiplatform_mpi_operator per cluster, or remove the other MPI Operator first.",
			in.Namespace, strings.Join(evidence, "\n  - "), manifests.MPIOperatorCRD)
		if training {
			detail += " For the training-operator, turn its MPIJob controller off by listing only the other kinds with --enable-scheme " +
				"(e.g. --enable-scheme=pytorchjob --enable-scheme=tfjob) and delete its v1 CRD mpijobs.kubeflow.org: the API server " +
				"refuses the MPI Operator's v2beta1-only CRD while v1 is a stored version."
		}
		return &Conflict{Summary: "Another controller reconciles MPIJobs", Detail: detail}, nil
	},
}

// TrainingOperator names the Kubeflow training-operator v1 (kubeflow.org
// TFJob, PyTorchJob, MPIJob v1, …) found in the cluster.
const TrainingOperator = "Kubeflow training-operator"

var (
	trainingOperatorImage = regexp.MustCompile(`(^|/)kubeflow/training-operator[:@]`)
)

// LiveMPIJobControllers finds the controllers of MPIJobs in the cluster, by
// the upstream names and labels of their Deployments: MPI Operators
// (Deployment mpi-operator, or labelled app.kubernetes.io/name=mpi-operator,
// running an mpi-operator image) and Kubeflow training-operators with their
// MPIJob controller on (Deployment training-operator, or labelled
// control-plane=kubeflow-training-operator, without --enable-scheme or with
// --enable-scheme=mpijob). Install.Name is the Deployment's name.
func LiveMPIJobControllers(ctx context.Context, c *kube.Client) ([]Install, error) {
	var out []Install
	mpi, err := c.DeploymentsNamed(ctx, "mpi-operator", "app.kubernetes.io/name=mpi-operator")
	if err != nil {
		return nil, err
	}
	for _, d := range mpi {
		if img := imageMatching(d, manifests.MPIOperatorImage); img != "" {
			out = append(out, Install{Chart: MPIOperator, Namespace: d.Namespace, Name: d.Name,
				Found: fmt.Sprintf("Deployment %s/%s, image %s", d.Namespace, d.Name, img)})
		}
	}
	to, err := c.DeploymentsNamed(ctx, "training-operator", "control-plane=kubeflow-training-operator")
	if err != nil {
		return nil, err
	}
	for _, d := range to {
		for _, ct := range d.Spec.Template.Spec.Containers {
			if !trainingOperatorImage.MatchString(ct.Image) || !reconcilesMPIJobs(append(ct.Command, ct.Args...)) {
				continue
			}
			out = append(out, Install{Chart: TrainingOperator, Namespace: d.Namespace, Name: d.Name,
				Found: fmt.Sprintf("Deployment %s/%s, image %s, MPIJob controller on", d.Namespace, d.Name, ct.Image)})
			break
		}
	}
	return out, nil
}

func imageMatching(d appsv1.Deployment, re *regexp.Regexp) string {
	for _, ct := range d.Spec.Template.Spec.Containers {
		if re.MatchString(ct.Image) {
			return ct.Image
		}
	}
	return ""
}

// reconcilesMPIJobs reads the training-operator's --enable-scheme flags
// (repeated; none means every kind).
func reconcilesMPIJobs(args []string) bool {
	var schemes []string
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "enable-scheme" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		schemes = append(schemes, strings.ToLower(value))
	}
	if len(schemes) == 0 {
		return true
	}
	for _, s := range schemes {
		if s == "mpijob" {
			return true
		}
	}
	return false
}

func isPlannedIn(planned []Install, namespace string) bool {
	for _, p := range ofChart(planned, MPIOperator) {
		if p.Namespace == namespace {
			return true
		}
	}
	return false
}
