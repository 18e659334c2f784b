package acctest

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// pollEvery is how often Eventually looks again.
const pollEvery = 250 * time.Millisecond

// Eventually polls check until it reports done and then returns nil. check
// also says what it saw (an error it met included); after bound, Eventually
// returns an error naming what was waited for and what check saw last.
//
// The bound is for a broken cluster (a controller that never acts), not a
// timing assertion: choose one generous enough for a loaded machine.
func Eventually(bound time.Duration, what string, check func() (done bool, seen string)) error {
	deadline := time.Now().Add(bound)
	for {
		done, seen := check()
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			if seen == "" {
				return fmt.Errorf("waited %s for %s", bound, what)
			}
			return fmt.Errorf("waited %s for %s; last seen: %s", bound, what, seen)
		}
		time.Sleep(pollEvery)
	}
}

// Pods are the pods a test waits for: those in Namespace ("" for every
// namespace) whose labels match Selector, a label selector such as
// "jobset.sigs.k8s.io/jobset-name=fit".
type Pods struct {
	Namespace, Selector string
}

// List returns the pods, those being deleted included.
func (p Pods) List(env *testenv.Env) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := env.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s: %w", p, err)
	}
	return list.Items, nil
}

// PodsWant is a condition on a set of pods; What names it in failures.
type PodsWant struct {
	What string
	OK   func([]corev1.Pod) bool
}

// RunningPods holds when exactly n of the pods are in phase Running (others
// may exist in other phases).
func RunningPods(n int) PodsWant {
	return PodsWant{What: fmt.Sprintf("%d Running pods", n), OK: func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n
	}}
}

// PodCount holds when exactly n pods exist, whatever their phase.
func PodCount(n int) PodsWant {
	return PodsWant{What: fmt.Sprintf("%d pods", n), OK: func(pods []corev1.Pod) bool { return len(pods) == n }}
}

// Await polls the pods until want holds of them and returns them. After
// bound (see Eventually) the error names the pods, what was waited for and
// the pods seen last: each one's phase, node and readiness.
func (p Pods) Await(env *testenv.Env, bound time.Duration, want PodsWant) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := Eventually(bound, want.What+" of "+p.String(), func() (bool, string) {
		var err error
		if pods, err = p.List(env); err != nil {
			return false, err.Error()
		}
		return want.OK(pods), DescribePods(pods)
	})
	return pods, err
}

// String names the pods in messages.
func (p Pods) String() string {
	ns := p.Namespace
	if ns == "" {
		ns = "(all namespaces)"
	}
	return fmt.Sprintf("pods %s in %s", p.Selector, ns)
}

// DescribePods says in one line what a test saw of pods: how many, and each
// one's name, phase, node and Ready condition.
func DescribePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "no pods"
	}
	parts := make([]string, 0, len(pods))
	for _, p := range pods {
		s := fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
		if p.Spec.NodeName == "" {
			s += " unscheduled"
		} else {
			s += " on " + p.Spec.NodeName
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				s += " Ready=" + string(c.Status)
			}
		}
		if p.DeletionTimestamp != nil {
			s += " deleting"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d pods: %s", len(pods), strings.Join(parts, ", "))
}

// AwaitDeployment waits until the Deployment namespace/name exists and
// returns it: one a controller makes from the object from (KServe's
// predictor from an InferenceService). After bound (see Eventually) the
// error says what was seen last: the Deployment's lookup error and from's
// status, where the controller says why it made none.
func AwaitDeployment(env *testenv.Env, namespace, name string, from Object, bound time.Duration) (*appsv1.Deployment, error) {
	var dep *appsv1.Deployment
	what := fmt.Sprintf("Deployment %s/%s, made from %s %s/%s", namespace, name, from.GVR.Resource, from.Namespace, from.Name)
	err := Eventually(bound, what, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		if dep, err = env.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return true, ""
		}
		seen := err.Error()
		switch obj, gerr := from.Get(env); {
		case gerr != nil:
			seen += fmt.Sprintf("; reading %s: %v", from.Name, gerr)
		case obj == nil:
			seen += fmt.Sprintf("; %s does not exist", from.Name)
		default:
			seen += fmt.Sprintf("; %s's status: %v", from.Name, obj.Object["status"])
		}
		return false, seen
	})
	return dep, err
}

// CreateThroughWebhooks creates obj, retrying while the API server cannot
// reach the webhooks yet (right after the install the Service's endpoint
// may still be settling); a denial is returned at once.
func CreateThroughWebhooks(env *testenv.Env, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri := env.Dynamic.Resource(gvr).Namespace(obj.GetNamespace())
	var out *unstructured.Unstructured
	var lastErr error
	err := Eventually(time.Minute, "create "+obj.GetName(), func() (bool, string) {
		out, lastErr = ri.Create(context.Background(), obj.DeepCopy(), metav1.CreateOptions{})
		if lastErr != nil && strings.Contains(lastErr.Error(), "denied") {
			return true, ""
		}
		return lastErr == nil, fmt.Sprint(lastErr)
	})
	if err != nil {
		return nil, err
	}
	return out, lastErr
}
