// Command testenv starts and stops a local cluster for the demo and for manual
// testing (`make cluster-up`, `make cluster-down`):
//
//	testenv up [--nodes 3] [--gpus 8] [--product NVIDIA-H100-80GB-HBM3] [--kueue-crds | --kueue] [--kuberay] [--lws] [--pod-runner] [--nccl-log FILE]
//	testenv down
//	testenv queues
//
// `up` leaves the cluster's processes running after it exits and writes
// <dir>/kubeconfig and <dir>/pids, where dir is $TESTENV_DIR or <repo>/.testenv.
// `down` stops them. With a pod runner, its agent process (log
// <dir>/testenv-agent.log) runs the controllers' pods, building each
// controller when its first pod runs, and the storage provisioner.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const usage = `usage:
  testenv up [flags]   start a local cluster that keeps running (idempotent)
  testenv down         stop it
  testenv build        build (or find cached) every control-plane binary, with progress
  testenv queues       list Kueue's ClusterQueues and LocalQueues (for machines without kubectl)
  testenv walkthrough  submit two 1-GPU Jobs to default/gpu-local-queue and show what Kueue admits

The cluster lives in $TESTENV_DIR, or <repo>/.testenv.

flags of up:
`

func main() {
	flags := flag.NewFlagSet("testenv up", flag.ExitOnError)
	nodes := flags.Int("nodes", 3, "number of fake GPU nodes")
	gpus := flags.Int("gpus", 8, "GPUs per node")
	product := flags.String("product", "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product label")
	gpuMemory := flags.String("gpu-memory", "81559", "nvidia.com/gpu.memory label (MiB); empty for none")
	name := flags.String("name", "gpu", "node name prefix (nodes are <name>-0, <name>-1, …)")
	kueueCRDs := flags.Bool("kueue-crds", false, "install Kueue's CRDs ("+testenv.KueueVersion+")")
	kueue := flags.Bool("kueue", false, "also install Kueue's chart ("+testenv.KueueVersion+"), its manager run by the pod runner: it admits Jobs; implies --kueue-crds")
	kuberay := flags.Bool("kuberay", false, "also install the KubeRay operator's chart ("+testenv.KubeRayVersion+"), with its CRDs: RayClusters get pods")
	lws := flags.Bool("lws", false, "also install the LeaderWorkerSet controller's chart ("+testenv.LWSVersion+"), with its CRD and webhooks")
	podRunner := flags.Bool("pod-runner", false, "run the controllers of installed charts (Kueue, LWS, KubeRay, JobSet, Trainer, MPI Operator, KServe, the endpoint picker) for real, each built when its first pod runs, their webhooks reached through an egress proxy; implied by --kueue, --kuberay, --lws")
	ncclLog := flags.String("nccl-log", "", "with the pod runner: the nccl-tests log (all_reduce_perf output) an aiplatform_nccl_check's launcher plays as its output; default <dir>/"+ncclLogFile+", read when the launcher runs (examples/fabric-check has a good and a bad one)")
	flags.Usage = func() {
		fmt.Fprint(os.Stderr, usage)
		flags.PrintDefaults()
	}
	if len(os.Args) < 2 {
		flags.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch os.Args[1] {
	case "up":
		_ = flags.Parse(os.Args[2:])
		pool := testenv.NodePool{Name: *name, Count: *nodes, GPUs: *gpus, Product: *product, GPUMemory: *gpuMemory}
		var controllers []testenv.Controller
		if *kuberay { // first: Kueue integrates RayClusters when their CRDs are there
			controllers = append(controllers, testenv.KubeRay())
		}
		if *lws {
			controllers = append(controllers, testenv.LWS())
		}
		if *kueue {
			controllers = append(controllers, testenv.Kueue())
		}
		err = up(ctx, pool, *kueueCRDs && !*kueue, controllers, *podRunner, *ncclLog)
	case "down":
		err = down()
	case "agent": // started by `up --pod-runner`: the egress proxy and pod runner
		if len(os.Args) != 3 {
			flags.Usage()
			os.Exit(2)
		}
		err = testenv.RunAgent(ctx, os.Args[2], os.Stderr)
	case "build":
		// Builds (or finds cached) every binary the tests and the demo use,
		// with progress on stderr, before go test buffers package output.
		var bins testenv.Binaries
		bins, err = testenv.EnsureAllBinaries(ctx, os.Stderr)
		if err == nil {
			fmt.Fprintf(os.Stderr, "testenv: %d binaries ready\n", len(bins))
		}
	case "queues":
		err = queues(ctx)
	case "walkthrough":
		err = walkthrough(ctx, "gpu-local-queue", "default")
	case "-h", "--help", "help":
		flags.Usage()
	default:
		flags.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
}

// ncclLogFile is the nccl-tests log an NCCL check's launcher plays, in the
// cluster's directory, when `up` is given no --nccl-log. (Not *.log: those
// are the cluster's own logs, removed when it starts again.)
const ncclLogFile = "nccl-tests.txt"

// ncclTestsImage are the images of an aiplatform_nccl_check's MPIJob (its
// default image and others of the nccl-tests repository).
var ncclTestsImage = regexp.MustCompile(`^ghcr\.io/coreweave/nccl-tests:`)

// dir is where the cluster lives: $TESTENV_DIR or <repo>/.testenv.
func dir() (string, error) {
	if d := os.Getenv("TESTENV_DIR"); d != "" {
		return filepath.Abs(d)
	}
	repo, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(repo, ".testenv"), nil
}

// up starts the cluster, with the controllers' charts installed and run by
// the pod runner; kueueCRDs applies Kueue's CRDs alone.
func up(ctx context.Context, pool testenv.NodePool, kueueCRDs bool, controllers []testenv.Controller, podRunner bool, ncclLog string) error {
	d, err := dir()
	if err != nil {
		return err
	}
	if ncclLog == "" {
		ncclLog = filepath.Join(d, ncclLogFile)
	} else if ncclLog, err = filepath.Abs(ncclLog); err != nil {
		return err
	}
	kubeconfig := filepath.Join(d, "kubeconfig")
	procs, err := testenv.ReadPIDs(d)
	if err != nil {
		return err
	}
	if len(procs) > 0 {
		if running(ctx, procs, kubeconfig) {
			if (podRunner || len(controllers) > 0) && !testenv.DetachedRunsPods(d) {
				return fmt.Errorf("the cluster running in %s has no pod runner: run `testenv down` first", d)
			}
			// The controllers asked for must be running there (checked as for
			// any external cluster: their APIs served, their webhooks answering).
			if len(controllers) > 0 {
				if err := external(ctx, kubeconfig, testenv.Options{Controllers: controllers}); err != nil {
					return fmt.Errorf("%w: run `testenv down` first", err)
				}
			}
			fmt.Printf("testenv: already running in %s\n", d)
			if kueueCRDs {
				if err := applyKueueCRDs(ctx, kubeconfig); err != nil {
					return err
				}
			}
			printKubeconfig(kubeconfig)
			return nil
		}
		// A partly dead cluster: clear it away and start afresh.
		fmt.Fprintf(os.Stderr, "testenv: stopping the remains of an earlier cluster in %s\n", d)
		testenv.StopProcesses(procs)
	}

	// --kueue, --lws, --kuberay imply the pod runner, every adapter on demand.
	podRunner = podRunner || len(controllers) > 0
	opts := testenv.Options{Dir: d, Detach: true, Scheduling: true, Controllers: controllers, PodRunner: podRunner}
	if podRunner {
		// An aiplatform_nccl_check's launcher plays the named log (its
		// image's mpirun is no program here); the workers stay kwok's.
		opts.Commands = []testenv.Command{{Image: ncclTestsImage, Container: "launcher", Play: ncclLog}}
	}
	if pool.Count > 0 {
		opts.Nodes = []testenv.NodePool{pool}
	}
	if kueueCRDs { // (Kueue's chart brings its own)
		crds, err := testenv.KueueCRDDir(ctx)
		if err != nil {
			return err
		}
		opts.CRDDirs = []string{crds}
	}
	if _, err := testenv.Start(ctx, opts); err != nil {
		return err // Start stopped whatever it had started
	}
	printKubeconfig(kubeconfig)
	return nil
}

// applyKueueCRDs installs Kueue's CRDs into the running cluster (idempotent).
func applyKueueCRDs(ctx context.Context, kubeconfig string) error {
	crds, err := testenv.KueueCRDDir(ctx)
	if err != nil {
		return err
	}
	return external(ctx, kubeconfig, testenv.Options{CRDDirs: []string{crds}})
}

// external runs testenv's external-cluster mode against the running cluster,
// which starts nothing: it applies opts' CRDs and checks its Controllers.
func external(ctx context.Context, kubeconfig string, opts testenv.Options) error {
	os.Setenv("TESTENV_KUBECONFIG", kubeconfig)
	defer os.Unsetenv("TESTENV_KUBECONFIG")
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	return env.Stop()
}

// running reports whether every recorded process is alive and the API server
// answers /readyz.
func running(ctx context.Context, procs []testenv.Process, kubeconfig string) bool {
	for _, p := range procs {
		if !p.Alive() {
			return false
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return false
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	_, err = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

func printKubeconfig(path string) {
	fmt.Printf("kubeconfig: %s\nexport KUBECONFIG=%s\n", path, path)
}

func down() error {
	d, err := dir()
	if err != nil {
		return err
	}
	procs, err := testenv.ReadPIDs(d)
	if err != nil {
		return err
	}
	if len(procs) == 0 {
		fmt.Printf("testenv: nothing running in %s\n", d)
		return nil
	}
	testenv.StopProcesses(procs)
	for _, p := range procs {
		if p.Alive() {
			return fmt.Errorf("%s (pid %d) is still running", p.Name, p.PID)
		}
	}
	if err := os.Remove(filepath.Join(d, testenv.PIDFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fmt.Printf("testenv: stopped the cluster in %s\n", d)
	return nil
}

// queues prints the cluster's ClusterQueues and LocalQueues with their spec
// and status counts, as `kubectl get clusterqueue,localqueue -A` would.
func queues(ctx context.Context) error {
	d, err := dir()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(d, "kubeconfig"))
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 3, ' ', 0)
	defer w.Flush()
	gv := schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}
	cqs, err := dyn.Resource(gv.WithResource("clusterqueues")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "CLUSTERQUEUE\tCOHORT\tPENDING\tADMITTED")
	for _, q := range cqs.Items {
		cohort, _, _ := unstructured.NestedString(q.Object, "spec", "cohortName")
		pending, _, _ := unstructured.NestedInt64(q.Object, "status", "pendingWorkloads")
		admitted, _, _ := unstructured.NestedInt64(q.Object, "status", "admittedWorkloads")
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", q.GetName(), cohort, pending, admitted)
	}
	lqs, err := dyn.Resource(gv.WithResource("localqueues")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nNAMESPACE\tLOCALQUEUE\tCLUSTERQUEUE\tPENDING\tADMITTED")
	for _, q := range lqs.Items {
		cq, _, _ := unstructured.NestedString(q.Object, "spec", "clusterQueue")
		pending, _, _ := unstructured.NestedInt64(q.Object, "status", "pendingWorkloads")
		admitted, _, _ := unstructured.NestedInt64(q.Object, "status", "admittedWorkloads")
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\n", q.GetNamespace(), q.GetName(), cq, pending, admitted)
	}
	return nil
}
