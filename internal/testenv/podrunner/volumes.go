package podrunner

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// syncVolumes re-projects the volumes every second, as the kubelet refreshes
// Secret and ConfigMap volumes, until ctx ends.
func (lp *localPod) syncVolumes(ctx context.Context) {
	for {
		if sleep(ctx, time.Second); ctx.Err() != nil {
			return
		}
		if err := lp.project(ctx); err != nil && ctx.Err() == nil {
			lp.logf("refreshing its volumes: %v", err)
		}
	}
}

// project writes the container's volumes under lp.dir/volumes and a
// kubeconfig with the pod's service account token (lp.dir/kubeconfig). Files
// are rewritten only when their content changes.
func (lp *localPod) project(ctx context.Context) error {
	lp.mu.Lock()
	pod := lp.pod
	lp.mu.Unlock()
	client := lp.runner.client.CoreV1()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range lp.container.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return fmt.Errorf("volume %q not in the pod", m.Name)
		}
		dir := filepath.Join(lp.dir, "volumes", m.Name)
		files := map[string][]byte{}
		switch {
		case v.ConfigMap != nil:
			cm, err := client.ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && ptr.Deref(v.ConfigMap.Optional, false)) {
				return fmt.Errorf("ConfigMap %s of volume %s: %w", v.ConfigMap.Name, m.Name, err)
			}
			if cm != nil {
				data := maps.Clone(cm.BinaryData)
				if data == nil {
					data = map[string][]byte{}
				}
				for k, s := range cm.Data {
					data[k] = []byte(s)
				}
				files = keyFiles(data, v.ConfigMap.Items)
			}
		case v.Secret != nil:
			s, err := client.Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && ptr.Deref(v.Secret.Optional, false)) {
				return fmt.Errorf("Secret %s of volume %s: %w", v.Secret.SecretName, m.Name, err)
			}
			if s != nil {
				files = keyFiles(s.Data, v.Secret.Items)
			}
		case v.Projected != nil:
			// The service account volume (token, ca.crt, namespace) and
			// the like; the token is the one written for the kubeconfig.
			for _, src := range v.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					if err := lp.refreshToken(ctx); err != nil {
						return err
					}
					tok, err := os.ReadFile(filepath.Join(lp.dir, "token"))
					if err != nil {
						return err
					}
					files[src.ServiceAccountToken.Path] = tok
				case src.ConfigMap != nil && src.ConfigMap.Name == "kube-root-ca.crt":
					files["ca.crt"] = lp.runner.ca
				case src.DownwardAPI != nil:
					for _, item := range src.DownwardAPI.Items {
						if item.FieldRef != nil && item.FieldRef.FieldPath == "metadata.Namespace" {
							files[item.Path] = []byte(pod.Namespace)
						}
					}
				}
			}
		}
		if err := writeFiles(dir, files); err != nil {
			return err
		}
		local := dir
		if m.SubPath != "" {
			local = filepath.Join(dir, m.SubPath)
		}
		lp.mu.Lock()
		lp.mounts[m.MountPath] = local
		lp.mu.Unlock()
	}
	return lp.refreshToken(ctx)
}

// keyFiles is a ConfigMap's or Secret's data as files: every key, or only the
// listed items under their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	if len(items) == 0 {
		return data
	}
	out := map[string][]byte{}
	for _, it := range items {
		if d, ok := data[it.Key]; ok {
			out[it.Path] = d
		}
	}
	return out
}

// writeFiles writes files under dir, each atomically and only when changed.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// refreshToken writes lp.dir/token, a token of the pod's service account
// bound to the pod (so it dies with it), when there is none or it is at 80% of
// its life, and lp.dir/kubeconfig, which reads it.
func (lp *localPod) refreshToken(ctx context.Context) error {
	lp.mu.Lock()
	pod, due := lp.pod, lp.tokenAt
	lp.mu.Unlock()
	if !due.IsZero() && time.Now().Before(due) {
		return nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	const life = 24 * time.Hour
	tr, err := lp.runner.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(life.Seconds())),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", pod.Namespace, sa, err)
	}
	tokenFile := filepath.Join(lp.dir, "token")
	if err := writeFiles(lp.dir, map[string][]byte{"token": []byte(tr.Status.Token)}); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: lp.runner.host, CertificateAuthorityData: lp.runner.ca}
	cfg.AuthInfos["pod"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "pod", Namespace: pod.Namespace}
	cfg.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(lp.dir, "kubeconfig")); err != nil {
		return err
	}
	lifetime := time.Until(tr.Status.ExpirationTimestamp.Time)
	lp.mu.Lock()
	lp.tokenAt = time.Now().Add(lifetime * 8 / 10)
	lp.mu.Unlock()
	return nil
}
