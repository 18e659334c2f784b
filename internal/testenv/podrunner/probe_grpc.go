package podrunner

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// readinessGRPC is the address and service of the container's gRPC
// readinessProbe on its moved port, "" when it has none.
func (lp *localPod) readinessGRPC() (addr, service string) {
	probe := lp.container.ReadinessProbe
	if probe == nil || probe.GRPC == nil {
		return "", ""
	}
	port, err := lp.targetPort(intstr.FromInt32(probe.GRPC.Port), 0)
	if err != nil {
		lp.logf("readinessProbe: %v; Ready once running", err)
		return "", ""
	}
	if probe.GRPC.Service != nil {
		service = *probe.GRPC.Service
	}
	return fmt.Sprintf("127.0.0.1:%d", port), service
}

// grpcServing asks the gRPC health service at addr about service, in
// plaintext as the kubelet's gRPC probe does: true when it answers SERVING.
func grpcServing(ctx context.Context, addr, service string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
}
