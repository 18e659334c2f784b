package podrunner

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The runner's gRPC readiness check answers as the kubelet's: SERVING for
// the service named, not while it is NOT_SERVING, not for an unknown
// service, and not when nothing listens.
func TestGRPCServing(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	h.SetServingStatus("inference-extension", healthpb.HealthCheckResponse_NOT_SERVING)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	ctx := context.Background()
	addr := lis.Addr().String()
	if grpcServing(ctx, addr, "inference-extension") {
		t.Error("NOT_SERVING reported ready")
	}
	h.SetServingStatus("inference-extension", healthpb.HealthCheckResponse_SERVING)
	if !grpcServing(ctx, addr, "inference-extension") {
		t.Error("SERVING not reported ready")
	}
	if !grpcServing(ctx, addr, "") {
		t.Error(`service "" (the server itself) not reported ready`)
	}
	if grpcServing(ctx, addr, "other") {
		t.Error("an unknown service reported ready")
	}
	srv.Stop()
	if grpcServing(ctx, addr, "") {
		t.Error("a stopped server reported ready")
	}
}
