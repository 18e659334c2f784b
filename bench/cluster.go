package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The fake GPU nodes: poolCount pools, node k in pool k % poolCount, each pool
// one GPU product (as NVIDIA's feature discovery labels it).
const (
	poolLabel  = "bench.aiplatform.dev/pool"
	poolCount  = 20
	nodePrefix = "bench-"
)

var products = []struct {
	name string
	gpus int
}{
	{"NVIDIA-H100-80GB-HBM3", 8},
	{"NVIDIA-A100-SXM4-80GB", 8},
	{"NVIDIA-L40S", 4},
	{"NVIDIA-H200", 8},
}

func poolName(i int) string { return fmt.Sprintf("p%d", i%poolCount) }

// cluster is the test cluster and a client with no client-side rate limit,
// for creating thousands of nodes.
type cluster struct {
	env    *testenv.Env
	fast   kubernetes.Interface
	nodes  int // bench nodes created so far: bench-00000 … bench-<nodes-1>
	joined int // extra nodes added by join
}

// nodeLease is kwok's node lease in the bench's cluster (see startCluster).
const nodeLease = 10 * time.Minute

func startCluster(ctx context.Context) (*cluster, error) {
	crds, err := testenv.KueueCRDDir(ctx)
	if err != nil {
		return nil, err
	}
	return startClusterWith(ctx, testenv.Options{
		// kube-controller-manager (with node-lifecycle-controller, which marks
		// a node NotReady when kwok stops renewing its lease), scheduler, kwok.
		Scheduling: true,
		CRDDirs:    []string{crds},
		// Leases renewed every 2.5 min instead of 10 s: at 5,000 nodes the
		// default costs 500 writes/s, over a core of this 2-core machine
		// taken from terraform, the provider and the floor alike. A real
		// cluster's control plane does not share the CI machine.
		NodeLease: nodeLease,
		Log:       os.Stderr,
		Timeout:   5 * time.Minute,
	})
}

// startClusterWith starts testenv with opts and the bench's fast client.
func startClusterWith(ctx context.Context, opts testenv.Options) (*cluster, error) {
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(env.RESTConfig)
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	fast, err := kubernetes.NewForConfig(rc)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	c := &cluster{env: env, fast: fast}
	// An external cluster (TESTENV_KUBECONFIG) may have the nodes of an
	// earlier run: keep them.
	list, err := fast.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	for _, n := range list.Items {
		if rest, ok := strings.CutPrefix(n.Name, nodePrefix+"join-"); ok {
			if k, err := strconv.Atoi(rest); err == nil {
				c.joined = max(c.joined, k)
			}
		} else if k, err := strconv.Atoi(strings.TrimPrefix(n.Name, nodePrefix)); err == nil {
			c.nodes = max(c.nodes, k+1)
		}
	}
	if c.nodes+c.joined > 0 {
		logf("the cluster has %d bench nodes and %d joined nodes of an earlier run", c.nodes, c.joined)
	}
	return c, nil
}

func gpuNode(name string, pool int) *corev1.Node {
	p := products[pool%len(products)]
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	list := corev1.ResourceList{
		"cpu": q("96"), "memory": q("1024Gi"), "pods": q("110"),
		"nvidia.com/gpu": *resource.NewQuantity(int64(p.gpus), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				poolLabel:                poolName(pool),
				testenv.GPUProductLabel:  p.name,
				testenv.GPUCountLabel:    strconv.Itoa(p.gpus),
			},
			Annotations: map[string]string{testenv.NodeAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{Capacity: list, Allocatable: list.DeepCopy()},
	}
}

// growth is how long a cluster took to grow: creating the nodes, until all
// had the Ready condition (kwok), until all were also free of the not-ready
// taint (kube-controller-manager's node-lifecycle-controller).
type growth struct {
	Created, Ready, Untainted time.Duration
}

// growTo creates nodes concurrently until there are n bench nodes, then
// waits until all are Ready and untainted.
func (c *cluster) growTo(ctx context.Context, n int) (g growth, err error) {
	start := time.Now()
	if n > c.nodes {
		var names []string
		for k := c.nodes; k < n; k++ {
			names = append(names, fmt.Sprintf("%s%05d", nodePrefix, k))
		}
		first := c.nodes
		if err := c.create(ctx, names, func(i int) int { return first + i }); err != nil {
			return g, err
		}
		c.nodes = n
	}
	g.Created = time.Since(start)
	readyAt, err := c.waitReady(ctx, c.nodes+c.joined, 15*time.Minute)
	if err != nil {
		return g, err
	}
	g.Ready, g.Untainted = readyAt.Sub(start), time.Since(start)
	return g, nil
}

// join adds one node to pool p0: the flavors selecting p0 gain its allocatable.
func (c *cluster) join(ctx context.Context) (string, error) {
	c.joined++
	name := fmt.Sprintf("%sjoin-%d", nodePrefix, c.joined)
	if err := c.create(ctx, []string{name}, func(int) int { return 0 }); err != nil {
		return "", err
	}
	_, err := c.waitReady(ctx, c.nodes+c.joined, 2*time.Minute)
	return name, err
}

const createWorkers = 32

func (c *cluster) create(ctx context.Context, names []string, pool func(i int) int) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     atomic.Int64
	)
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	finished := make(chan struct{})
	go func() {
		for {
			select {
			case <-finished:
				return
			case <-progress.C:
				logf("  created %d/%d nodes", done.Load(), len(names))
			}
		}
	}()
	for range min(createWorkers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) || ctx.Err() != nil {
					return
				}
				_, err := c.fast.CoreV1().Nodes().Create(ctx, gpuNode(names[i], pool(i)), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating node %s: %w", names[i], err)
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(finished)
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// nodeState counts the bench nodes by readiness, from one LIST served by the
// API server's watch cache.
type nodeState struct {
	Total, Ready, NotReadyTainted int
}

func (s nodeState) String() string {
	out := fmt.Sprintf("%d/%d Ready", s.Ready, s.Total)
	if s.NotReadyTainted > 0 {
		out += fmt.Sprintf(", %d tainted not-ready/unreachable", s.NotReadyTainted)
	}
	return out
}

func (c *cluster) state(ctx context.Context) (nodeState, error) {
	list, err := c.fast.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel, ResourceVersion: "0"})
	if err != nil {
		return nodeState{}, err
	}
	var s nodeState
	for i := range list.Items {
		n := &list.Items[i]
		if !strings.HasPrefix(n.Name, nodePrefix) {
			continue
		}
		s.Total++
		if slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			s.Ready++
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
		}) {
			s.NotReadyTainted++
		}
	}
	return s, nil
}

// waitReady waits until want bench nodes are Ready and free of the
// not-ready/unreachable taints (what a scheduler needs; the provider counts
// the Ready condition). It returns when all first had the Ready condition.
func (c *cluster) waitReady(ctx context.Context, want int, timeout time.Duration) (readyAt time.Time, err error) {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		s, err := c.state(ctx)
		if err == nil && s.Total == want && s.Ready == want && readyAt.IsZero() {
			readyAt = time.Now()
		}
		if err == nil && s.Total == want && s.Ready == want && s.NotReadyTainted == 0 {
			return readyAt, nil
		}
		if time.Now().After(deadline) {
			return readyAt, fmt.Errorf("nodes not Ready after %s: %v (err %v)", timeout, s, err)
		}
		if time.Since(lastLog) > 5*time.Second {
			logf("  nodes: %v", s)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return readyAt, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cpuSample is the CPU time each cluster component used over a window, in cores.
type cpuSample map[string]float64

// idleCPU measures how busy the cluster's own processes keep the machine when
// nobody uses the cluster (kwok renewing thousands of node leases, the API
// server and etcd serving it).
func (c *cluster) idleCPU(ctx context.Context, window time.Duration) cpuSample {
	procs := c.env.Processes()
	before := map[string]float64{}
	for _, p := range procs {
		before[p.Name] = cpuSeconds(p.PID)
	}
	start := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	elapsed := time.Since(start).Seconds()
	out := cpuSample{}
	for _, p := range procs {
		out[p.Name] = (cpuSeconds(p.PID) - before[p.Name]) / elapsed
	}
	return out
}

func (s cpuSample) String() string {
	var parts []string
	total := 0.0
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if v, ok := s[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", name, v))
			total += v
		}
	}
	return fmt.Sprintf("%.2f cores (%s)", total, strings.Join(parts, ", "))
}
