package kube

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reading a whole container log, for resources whose result is what a
// container printed (aiplatform_nccl_check reads the nccl-tests table from
// its MPI launcher). The call is the pods/log subresource,
//
//	GET /api/v1/namespaces/{namespace}/pods/{pod}/log?container={container}&limitBytes={limit}
//
// which the API server answers by asking the kubelet of the pod's node (or,
// in the test cluster, whatever serves that node's kubelet API): the same
// request on a real and on a test cluster.

// DefaultLogLimit bounds a whole-log read: an nccl-tests run with
// NCCL_DEBUG=INFO on hundreds of ranks prints a few MB.
const DefaultLogLimit = 32 << 20

// wholeLogTimeout bounds one whole-log read (a large log from a slow
// kubelet takes longer than a tail).
const wholeLogTimeout = 2 * time.Minute

// PodLog is what PodLogAll read.
type PodLog struct {
	Text string
	// Truncated is true when the log was longer than the limit: Text is its
	// first limit bytes.
	Truncated bool
}

// PodLogAll reads a container's whole log, up to limit bytes (DefaultLogLimit
// when limit ≤ 0), through the pods/log subresource. A failure wraps
// ErrLogsUnavailable and says which pod and container.
func (c *Client) PodLogAll(ctx context.Context, namespace, pod, container string, limit int64) (PodLog, error) {
	typed, err := c.Typed()
	if err != nil {
		return PodLog{}, err
	}
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	ctx, cancel := context.WithTimeout(ctx, wholeLogTimeout)
	defer cancel()
	// Ask for one byte more than the limit, so that a log of exactly limit
	// bytes is not reported as truncated.
	ask := limit + 1
	stream, err := typed.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &ask}).Stream(ctx)
	if err != nil {
		return PodLog{}, logError(namespace, pod, container, err)
	}
	defer stream.Close()
	body, err := io.ReadAll(io.LimitReader(stream, ask))
	if err != nil {
		return PodLog{}, logError(namespace, pod, container, err)
	}
	out := PodLog{Text: string(body)}
	if int64(len(body)) > limit {
		out.Text, out.Truncated = string(body[:limit]), true
	}
	return out, nil
}

func logError(namespace, pod, container string, err error) error {
	msg := strings.TrimSpace(err.Error())
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return fmt.Errorf("%w: reading the log of %s/%s container %s (GET /api/v1/namespaces/%s/pods/%s/log?container=%s): %s",
		ErrLogsUnavailable, namespace, pod, container, namespace, pod, container, msg)
}
