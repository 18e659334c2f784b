package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Storage in a local cluster: a default StorageClass whose claims are bound to
// hostPath PersistentVolumes by a small provisioner running in the process
// that started the cluster, with kube-controller-manager's own PV binder and
// protection controllers doing the rest, as with any external provisioner:
//
//   - the binder sees a claim of StorageClass, annotates it with the class's
//     provisioner (volume.kubernetes.io/storage-provisioner) and waits;
//   - the provisioner creates a PersistentVolume pre-bound to the claim
//     (claimRef), a hostPath under <Dir>/volumes, with the claim's size and
//     access modes (any of them, ReadWriteMany included);
//   - the binder binds the two; the scheduler then places pods that use the
//     claim (no kubelet mounts anything: kwok fakes the pods);
//   - when the claim is deleted the binder marks the volume Released and the
//     provisioner deletes it (reclaim policy Delete).
//
// The provisioner lives as long as the process that called Start (a test
// binary); in a cluster left running by `testenv up`, the agent process runs
// it (RunProvisioner), so claims bind after `up` has exited.
const (
	// StorageClass is the name of the default StorageClass.
	StorageClass = "standard"
	// StorageProvisioner is its provisioner.
	StorageProvisioner = "testenv.aiplatform.dev/hostpath"
)

const (
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

// StartStorage creates the default StorageClass and starts the provisioner
// of volumes under <dir>/volumes, which runs until stop is called.
func StartStorage(ctx context.Context, client kubernetes.Interface, dir string, logf func(string, ...any)) (stop context.CancelFunc, _ error) {
	if err := CreateStorageClass(ctx, client, logf); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	go RunProvisioner(runCtx, client, dir, logf)
	return cancel, nil
}

// CreateStorageClass creates the default StorageClass (idempotent).
func CreateStorageClass(ctx context.Context, client kubernetes.Interface, logf func(string, ...any)) error {
	t := time.Now()
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	expand := true
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          StorageProvisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: &expand,
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: creating StorageClass %s: %w", StorageClass, err)
	}
	logf("StorageClass %s (default, provisioner %s) ready (%s)", StorageClass, StorageProvisioner, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// RunProvisioner provisions and reclaims the StorageClass's volumes, under
// <dir>/volumes, until ctx ends.
func RunProvisioner(ctx context.Context, client kubernetes.Interface, dir string, logf func(string, ...any)) {
	st := &storage{client: client, dir: dir, logf: logf}
	st.runProvisioner(ctx)
}

// storage is the provisioner's state.
type storage struct {
	client kubernetes.Interface
	dir    string
	logf   func(string, ...any)
}

// runProvisioner polls claims and volumes twice a second until ctx ends. (A
// poll, not an informer: the lists are a handful of objects, and client-go's
// informers would pull a module the provider does not otherwise need.)
func (e *storage) runProvisioner(ctx context.Context) {
	for {
		if claims, err := e.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{}); err == nil {
			for i := range claims.Items {
				e.provision(ctx, &claims.Items[i])
			}
		}
		if volumes, err := e.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
			for i := range volumes.Items {
				e.reclaim(ctx, &volumes.Items[i])
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// provision creates the volume of a claim the binder handed to this
// provisioner. It is idempotent: the volume's name is derived from the claim.
func (e *storage) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	if pvc.Annotations[annStorageProvisioner] != StorageProvisioner || pvc.Spec.VolumeName != "" ||
		pvc.DeletionTimestamp != nil || pvc.Status.Phase != corev1.ClaimPending {
		return
	}
	name := "pvc-" + string(pvc.UID)
	dir := filepath.Join(e.dir, "volumes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.logf("storage: %v", err)
		return
	}
	class := StorageClass
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: StorageProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}
	_, err := e.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
		e.logf("storage: provisioning %s for claim %s/%s: %v", name, pvc.Namespace, pvc.Name, err)
	}
}

// reclaim deletes a volume of this provisioner once its claim is gone.
func (e *storage) reclaim(ctx context.Context, pv *corev1.PersistentVolume) {
	if pv.Annotations[annProvisionedBy] != StorageProvisioner || pv.DeletionTimestamp != nil ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		(pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed) {
		return
	}
	err := e.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		if ctx.Err() == nil {
			e.logf("storage: deleting released volume %s: %v", pv.Name, err)
		}
		return
	}
	if pv.Spec.HostPath != nil {
		_ = os.RemoveAll(pv.Spec.HostPath.Path)
	}
}
