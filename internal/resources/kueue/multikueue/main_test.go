// Package multikueue_test judges aiplatform_multikueue_cluster and
// aiplatform_multikueue_config on two clusters, each a whole local control
// plane with the real Kueue v0.17.0 manager (MultiKueue is beta and on by
// default there): a manager, which holds the queues users submit to, and a
// worker, which has the GPU node and runs what the manager dispatches.
package multikueue_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const gpuProduct = "NVIDIA-H100-80GB-HBM3"

// The manager needs a node only for the Kueue manager's pod; the worker has
// one 8-GPU node.
func TestMain(m *testing.M) {
	testenv.MainClusters(m,
		testenv.Options{Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{{Name: "manager", Count: 1}}},
		testenv.Options{Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{{Name: "worker-gpu", Count: 1, GPUs: 8, Product: gpuProduct}}},
	)
}

// clustersOf returns the manager (Current, where the provider points) and
// the worker.
func clustersOf(t *testing.T) (manager, worker *testenv.Env) {
	t.Helper()
	manager = acctest.Env(t)
	all := testenv.Clusters()
	if len(all) != 2 || all[0] != manager {
		t.Fatalf("want the manager and the worker from testenv.MainClusters, have %d clusters", len(all))
	}
	return manager, all[1]
}

// workerKubeconfig is the worker's kubeconfig as the manager's Kueue gets
// it: CA data and token inline, server on a loopback address.
func workerKubeconfig(t *testing.T, worker *testenv.Env) string {
	t.Helper()
	b, err := worker.KubeconfigData()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func kueueObject(resource, namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}, Namespace: namespace, Name: name}
}

func secret(name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Namespace: testenv.KueueNamespace, Name: name}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// logRSS logs the resident memory of both clusters.
func logRSS(t *testing.T, manager, worker *testenv.Env) {
	t.Helper()
	var total int64
	for _, c := range []struct {
		name string
		env  *testenv.Env
	}{{"manager", manager}, {"worker", worker}} {
		rss, err := c.env.RSS()
		if err != nil {
			t.Fatal(err)
		}
		total += rss
		t.Logf("RSS of the %s cluster (%d processes): %d MiB", c.name, len(c.env.Processes())+len(c.env.PodProcesses()), rss>>20)
	}
	t.Logf("RSS of both clusters: %d MiB", total>>20)
}
