package podrunner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// The visibility Service (targetPort "visibility", 8082 in the container)
// gets a ready endpoint on its port's name, owned by the pod; the webhook
// Service, on another port, and a Service selecting other pods get none.
func TestEndpointSlicesOfAStubbedPort(t *testing.T) {
	selector := map[string]string{"app": "kueue"}
	svc := func(name, ip string, target intstr.IntOrString, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kueue-system"},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Selector: sel, Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: target}}}}
	}
	client := fake.NewClientset(
		svc("kueue-visibility-server", "10.0.0.11", intstr.FromString("visibility"), selector),
		svc("kueue-webhook-service", "10.0.0.12", intstr.FromInt32(9443), selector),
		svc("other", "10.0.0.13", intstr.FromInt32(8082), map[string]string{"app": "other"}),
	)
	lp := &localPod{
		runner: &podRunner{client: client},
		pod:    &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "kueue-0", UID: "u1", Labels: selector}},
		container: &corev1.Container{Name: "manager", Ports: []corev1.ContainerPort{
			{Name: "webhook-server", ContainerPort: 9443}, {Name: "visibility", ContainerPort: 8082}}},
	}
	ctx := context.Background()
	for range 2 { // the second pass finds it there
		if err := lp.ensureEndpointSlices(ctx, kueueVisibilityPort); err != nil {
			t.Fatal(err)
		}
	}
	slices, err := client.DiscoveryV1().EndpointSlices("kueue-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 1 {
		t.Fatalf("%d EndpointSlices, want 1 (the visibility Service's): %v", len(slices.Items), slices.Items)
	}
	s := slices.Items[0]
	if s.Labels[discoveryv1.LabelServiceName] != "kueue-visibility-server" || len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "10.0.0.11" ||
		!*s.Endpoints[0].Conditions.Ready || len(s.Ports) != 1 || *s.Ports[0].Name != "https" || *s.Ports[0].Port != 8082 ||
		len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "u1" {
		t.Errorf("EndpointSlice %+v", s)
	}
}
