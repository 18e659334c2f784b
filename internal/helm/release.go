package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func init() {
	// Helm's writes carry the provider's field manager, like every other write.
	helmkube.ManagedFieldsManager = kube.FieldManager
}

// maxHistory bounds the release revisions Helm keeps (each re-apply after
// drift is one).
const maxHistory = 10

// Logger receives progress lines (the resources pass tflog).
type Logger func(msg string)

// Release is one Helm release in the cluster.
type Release struct {
	Client    *kube.Client
	Namespace string
	Name      string
	Log       Logger // progress, shown at INFO
	Debug     Logger // Helm's own log lines
}

// ID is the release's "namespace/name".
func (r *Release) ID() string { return r.Namespace + "/" + r.Name }

func (r *Release) log(format string, args ...any) {
	if r.Log != nil {
		r.Log(fmt.Sprintf(format, args...))
	}
}

func (r *Release) config() (*action.Configuration, error) {
	cfg := new(action.Configuration)
	debug := func(format string, args ...any) {
		if r.Debug != nil {
			r.Debug(fmt.Sprintf(format, args...))
		}
	}
	if err := cfg.Init(r.Client.RESTClientGetter(r.Namespace), r.Namespace, "secret", debug); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Options are what an install or upgrade needs besides the release's name.
type Options struct {
	Chart   *chart.Chart
	Values  map[string]any
	Timeout time.Duration
	// Omit are API groups whose objects the chart renders but the release
	// leaves out, e.g. "cert-manager.io" for KServe's chart, which renders a
	// Certificate whatever its values say: without cert-manager's CRDs the
	// install would fail, and the provider (or testenv) issues the webhook
	// certificate itself.
	Omit []string
}

// releaseLocks serialises operations on one release within the provider.
var releaseLocks sync.Map // host + namespace/name → *sync.Mutex

func (r *Release) lock() func() {
	v, _ := releaseLocks.LoadOrStore(r.Client.Host()+" "+r.ID(), &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// Install installs the chart as a new release (creating the namespace), then
// waits until every object is ready and every webhook answers. Any failure
// uninstalls what was installed and says why.
func (r *Release) Install(ctx context.Context, o Options) (*release.Release, error) {
	defer r.lock()()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cfg, err := r.config()
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = r.Name, r.Namespace
	in.CreateNamespace = true
	in.Timeout = o.Timeout
	in.PostRenderer = keepCRDs{omit: o.Omit}
	start := time.Now()
	r.log("installing chart %s %s as release %s", o.Chart.Metadata.Name, o.Chart.Metadata.Version, r.ID())
	rel, err := in.RunWithContext(ctx, o.Chart, o.Values)
	if err != nil {
		return nil, r.failInstall(err, "")
	}
	objs, err := Objects(rel)
	if err != nil {
		return nil, r.failInstall(err, "")
	}
	r.log("release %s revision %d: %d objects created in %s; waiting until they are ready",
		r.ID(), rel.Version, len(objs), time.Since(start).Round(100*time.Millisecond))
	if err := r.waitReady(ctx, append(objs, crdObjects(o.Chart)...), o.Timeout, o.Omit); err != nil {
		return nil, r.failInstall(err, "")
	}
	return rel, nil
}

// failInstall removes a failed install, as Helm's --atomic does.
func (r *Release) failInstall(cause error, during string) error {
	if during != "" {
		cause = fmt.Errorf("%s: %w", during, cause)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, found, err := r.Get(ctx); err != nil || !found {
		return fmt.Errorf("installing %s failed: %w", r.ID(), cause)
	}
	if err := r.uninstall(ctx, false, 5*time.Minute); err != nil {
		return fmt.Errorf("installing %s failed: %w\n\nRemoving the failed release failed too: %v", r.ID(), cause, err)
	}
	return fmt.Errorf("installing %s failed, and the failed release was removed: %w", r.ID(), cause)
}

// Upgrade upgrades the release to the chart and values, waits until every
// object is ready and every webhook answers, and then puts back, by
// server-side apply, any object that still differs from the chart (Helm's
// patch leaves alone what changed in the cluster when the chart did not
// change it). A failure rolls back to the
// previous revision and says why.
func (r *Release) Upgrade(ctx context.Context, o Options) (*release.Release, error) {
	defer r.lock()()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cfg, err := r.config()
	if err != nil {
		return nil, err
	}
	prev, err := cfg.Releases.Deployed(r.Name)
	if err != nil {
		prev = nil // no deployed revision (a failed one only): nothing to roll back to
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = r.Namespace
	up.Timeout = o.Timeout
	up.MaxHistory = maxHistory
	up.PostRenderer = keepCRDs{omit: o.Omit}
	start := time.Now()
	// Helm's upgrade leaves the chart's crds/ directory alone (it creates
	// those CRDs at install only), so a new version's CRDs there — LWS
	// 0.9's DisaggregatedSet, new fields of JobSet's — would never reach the
	// cluster: applied first, as the new controller needs them. A rollback
	// puts back the previous chart's (restoreCRDs).
	if err := r.adoptMovedCRDs(ctx, prev, o); err != nil {
		return nil, err
	}
	crds := crdObjects(o.Chart)
	if len(crds) > 0 {
		r.log("applying the %d CRDs of chart %s %s's crds/", len(crds), o.Chart.Metadata.Name, o.Chart.Metadata.Version)
		if err := r.Client.ApplyObjects(ctx, crds, r.Namespace); err != nil {
			return nil, fmt.Errorf("upgrading %s: the chart's CRDs: %w", r.ID(), err)
		}
	}
	r.log("upgrading release %s to chart %s %s", r.ID(), o.Chart.Metadata.Name, o.Chart.Metadata.Version)
	rel, err := up.RunWithContext(ctx, r.Name, o.Chart, o.Values)
	if err != nil {
		return nil, r.rollback(cfg, prev, err, "")
	}
	objs, err := Objects(rel)
	if err != nil {
		return nil, r.rollback(cfg, prev, err, "")
	}
	r.log("release %s revision %d: %d objects applied in %s; waiting until they are ready",
		r.ID(), rel.Version, len(objs), time.Since(start).Round(100*time.Millisecond))
	all := append(objs, crds...)
	if err := r.waitReady(ctx, all, o.Timeout, o.Omit); err != nil {
		return nil, r.rollback(cfg, prev, err, "")
	}
	if err := r.repair(ctx, all); err != nil {
		return nil, err
	}
	return rel, nil
}

// waitReady waits until the release's objects are ready, then until each of
// its webhooks answers a request through it (kube.Client.WaitWebhooks): an
// Available Deployment is not yet a webhook the API server reaches.
func (r *Release) waitReady(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration, omit []string) error {
	if err := r.Client.WaitReady(ctx, objs, r.Namespace, r.Log); err != nil {
		return fmt.Errorf("waiting for readiness (timeout %s): %w", timeout, err)
	}
	// A chart whose cert-manager objects are left out (KServe's without
	// cert-manager) gets its webhooks' CA from the caller after this.
	if err := r.Client.WaitWebhooks(ctx, objs, r.Namespace, slices.Contains(omit, certManagerGroup), r.Log); err != nil {
		return fmt.Errorf("waiting for its webhooks to answer (timeout %s): %w", timeout, err)
	}
	return nil
}

// repair server-side applies the objects that still differ from the release.
func (r *Release) repair(ctx context.Context, objs []*unstructured.Unstructured) error {
	objs = withoutPlaceholders(objs)
	var drifted []*unstructured.Unstructured
	for i, d := range r.Client.Drift(ctx, objs, r.Namespace) {
		if d.Drifted() {
			drifted = append(drifted, objs[i])
			for _, l := range d.Lines() {
				r.log("putting back %s", l)
			}
		}
	}
	if len(drifted) == 0 {
		return nil
	}
	if err := r.Client.ApplyObjects(ctx, drifted, r.Namespace); err != nil {
		return fmt.Errorf("release %s: putting back objects changed in the cluster: %w", r.ID(), err)
	}
	return r.Client.WaitReady(ctx, drifted, r.Namespace, r.Log)
}

// adoptMovedCRDs gives the CRDs the previous chart created from its crds/
// and o.Chart renders among its templates (MovedCRDs, shown in the plan)
// Helm's ownership label and annotations, which Helm checks before it
// updates an object it did not create. Only CRDs that carry no ownership
// yet are patched; one another release owns is left to Helm's refusal.
func (r *Release) adoptMovedCRDs(ctx context.Context, prev *release.Release, o Options) error {
	if prev == nil || prev.Chart == nil || !dropsCRDs(prev.Chart, o.Chart) {
		return nil // no CRD of the previous chart's crds/ left it: nothing can have moved, no render needed
	}
	rendered, err := Render(o.Chart, o.Values, r.Namespace, r.Name, o.Omit)
	if err != nil {
		return fmt.Errorf("upgrading %s: %w", r.ID(), err)
	}
	for _, name := range MovedCRDs(prev.Chart, o.Chart, rendered) {
		live, found, err := r.Client.Get(ctx, crdKind, kube.Ref{Name: name})
		if err != nil {
			return fmt.Errorf("upgrading %s: reading CRD %s: %w", r.ID(), name, err)
		}
		if !found || live.GetLabels()[managedByLabel] != "" || live.GetAnnotations()[releaseNameAnnotation] != "" {
			continue
		}
		r.log("CRD %s moves from chart %s's crds/ into its templates: adding Helm's ownership of release %s", name, o.Chart.Metadata.Name, r.ID())
		patch := map[string]any{"metadata": map[string]any{
			"labels":      map[string]any{managedByLabel: managedByHelm},
			"annotations": map[string]any{releaseNameAnnotation: r.Name, releaseNamespaceAnnotation: r.Namespace},
		}}
		if _, err := r.Client.MergePatch(ctx, crdKind, kube.Ref{Name: name}, patch); err != nil {
			return fmt.Errorf("upgrading %s: adding Helm's ownership to CRD %s: %w", r.ID(), name, err)
		}
	}
	return nil
}

func (r *Release) rollback(cfg *action.Configuration, prev *release.Release, cause error, during string) error {
	if during != "" {
		cause = fmt.Errorf("%s: %w", during, cause)
	}
	if prev == nil {
		return fmt.Errorf("upgrading %s failed (there is no earlier deployed revision to roll back to): %w", r.ID(), cause)
	}
	rb := action.NewRollback(cfg)
	rb.Version = prev.Version
	rb.MaxHistory = maxHistory
	rb.Timeout = 5 * time.Minute
	if err := rb.Run(r.Name); err != nil {
		return fmt.Errorf("upgrading %s failed: %w\n\nRolling back to revision %d failed too: %v", r.ID(), cause, prev.Version, err)
	}
	r.log("upgrade of %s failed; rolled back to revision %d", r.ID(), prev.Version)
	if err := r.restoreCRDs(prev); err != nil {
		return fmt.Errorf("upgrading %s failed, and it was rolled back to revision %d (chart %s %s), but its CRDs were not put back: %v; "+
			"the next plan shows them as drift: %w", r.ID(), prev.Version, prev.Chart.Metadata.Name, prev.Chart.Metadata.Version, err, cause)
	}
	return fmt.Errorf("upgrading %s failed, and it was rolled back to revision %d (chart %s %s), which is in place again: %w",
		r.ID(), prev.Version, prev.Chart.Metadata.Name, prev.Chart.Metadata.Version, cause)
}

// dropsCRDs: a CRD of before's crds/ is not in next's crds/ (so next may
// render it among its templates).
func dropsCRDs(before, next *chart.Chart) bool {
	stays := map[string]bool{}
	for _, o := range crdObjects(next) {
		stays[o.GetName()] = true
	}
	for _, o := range crdObjects(before) {
		if !stays[o.GetName()] {
			return true
		}
	}
	return false
}

// restoreCRDs puts back the CRDs of the rolled-back-to chart's crds/: the
// failed upgrade applied the new chart's (its crds/ first, or its templates
// where the new chart moved them), and Helm's rollback leaves both. A CRD
// whose storage version the new chart changed is left as it is, as objects
// may already be stored at the new version; the next plan shows it.
func (r *Release) restoreCRDs(prev *release.Release) error {
	crds := crdObjects(prev.Chart)
	if len(crds) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var restore []*unstructured.Unstructured
	for _, crd := range crds {
		live, found, err := r.Client.Get(ctx, crdKind, kube.Ref{Name: crd.GetName()})
		if err != nil {
			return err
		}
		if found && storageVersion(live) != storageVersion(crd) {
			r.log("CRD %s stays as the failed upgrade left it: it stores %s now, chart %s %s's stores %s",
				crd.GetName(), storageVersion(live), prev.Chart.Metadata.Name, prev.Chart.Metadata.Version, storageVersion(crd))
			continue
		}
		restore = append(restore, crd)
	}
	if len(restore) == 0 {
		return nil
	}
	r.log("putting back the %d CRDs of chart %s %s's crds/", len(restore), prev.Chart.Metadata.Name, prev.Chart.Metadata.Version)
	return r.Client.ApplyObjects(ctx, restore, r.Namespace)
}

// storageVersion is the name of a CRD's version with storage: true.
func storageVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			return fmt.Sprint(m["name"])
		}
	}
	return ""
}

// Uninstall removes the release and waits until its objects are gone. CRDs
// stay (and with them every custom resource) unless removeCRDs.
func (r *Release) Uninstall(ctx context.Context, removeCRDs bool, timeout time.Duration) error {
	defer r.lock()()
	return r.uninstall(ctx, removeCRDs, timeout)
}

func (r *Release) uninstall(ctx context.Context, removeCRDs bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := r.config()
	if err != nil {
		return err
	}
	rel, err := cfg.Releases.Last(r.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	if removeCRDs {
		objs, _ := Objects(rel)
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, o)
			}
		}
		if rel.Chart != nil {
			crds = append(crds, crdObjects(rel.Chart)...)
		}
	}
	// Helm deletes; the wait is ours (kube.WaitGone): Helm's would wait
	// forever for an aggregated ClusterRole (Kueue's kueue-batch-admin-role)
	// that kube-controller-manager's aggregation controller re-creates right
	// after it is deleted together with its sources, and leave it behind.
	gone := deleted(rel)
	un := action.NewUninstall(cfg)
	un.Timeout = timeout
	un.DeletionPropagation = "background"
	r.log("uninstalling release %s (revision %d)", r.ID(), rel.Version)
	if _, err := un.Run(r.Name); err != nil {
		return fmt.Errorf("uninstalling %s: %w", r.ID(), err)
	}
	if err := r.Client.WaitGone(ctx, gone, r.Namespace, kube.RecreatedByAggregation, r.Log); err != nil {
		return fmt.Errorf("uninstalled %s, but waiting for its objects to be deleted: %w", r.ID(), err)
	}
	for _, crd := range crds {
		r.log("removing CRD %s", crd.GetName())
		if err := r.Client.DeleteObject(ctx, crd); err != nil {
			return fmt.Errorf("uninstalled %s, but removing CRD %s failed: %w", r.ID(), crd.GetName(), err)
		}
	}
	return nil
}

// deleted are the objects of rel that an uninstall deletes: its manifest's,
// but those Helm keeps (helm.sh/resource-policy: keep, as keepCRDs marks
// CRDs).
func deleted(rel *release.Release) []*unstructured.Unstructured {
	objs, _ := Objects(rel)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			out = append(out, o)
		}
	}
	return out
}

// Objects parses a release's manifest (hooks excluded).
func Objects(rel *release.Release) ([]*unstructured.Unstructured, error) {
	return parseManifests(rel.Manifest)
}

func parseManifests(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range splitDocuments(manifest) {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("parsing the release manifest: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "List" {
			items, _ := obj["items"].([]any)
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					out = append(out, &unstructured.Unstructured{Object: m})
				}
			}
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// splitDocuments cuts a multi-document YAML stream at each line that starts
// with "---", in order, leaving out empty documents. Helm's SplitManifests
// does the same with a regular expression over the whole text and returns a
// map to sort again; at every plan of a platform (five releases, Kueue's
// manifest alone 900 KB) that was two thirds of the parsing time.
func splitDocuments(stream string) []string {
	var docs []string
	start := 0
	add := func(end int) {
		if doc := strings.TrimSpace(stream[start:end]); doc != "" {
			docs = append(docs, doc)
		}
	}
	for i := 0; i < len(stream); {
		end := strings.IndexByte(stream[i:], '\n')
		if end < 0 {
			end = len(stream)
		} else {
			end += i
		}
		if strings.HasPrefix(stream[i:end], "---") {
			add(i)
			start = i + 3 // the rest of the line, if any, opens the next document
		}
		i = end + 1
	}
	add(len(stream))
	return docs
}

// crdObjects are the CRDs of the chart's crds/ directory, which Helm creates
// before the templates and does not track in the release.
func crdObjects(ch *chart.Chart) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs, err := parseManifests(string(crd.File.Data))
		if err == nil {
			out = append(out, objs...)
		}
	}
	return out
}

// certManagerGroup is cert-manager's API group (Options.Omit).
const certManagerGroup = "cert-manager.io"

// Helm's ownership label and its value, and its ownership annotations.
const (
	managedByLabel             = "app.kubernetes.io/managed-by"
	managedByHelm              = "Helm"
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// crdKind is the API's CustomResourceDefinition.
var crdKind = kube.Kind{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}

// keepCRDs marks every CRD of the release with helm.sh/resource-policy=keep,
// so that uninstalling the release leaves the CRDs, and with them every
// custom resource users created; remove_crds deletes them explicitly. It
// also leaves out the objects of the API groups in omit (Options.Omit), and
// records Helm's managed-by label as Helm sets it.
type keepCRDs struct{ omit []string }

func (k keepCRDs) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	objs, err := parseManifests(in.String())
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, o := range objs {
		if slices.Contains(k.omit, o.GroupVersionKind().Group) {
			continue
		}
		// Helm labels every object it creates app.kubernetes.io/managed-by:
		// Helm, over whatever the chart says (KServe's ServiceAccount says
		// kserve-controller-manager): recorded as the cluster will have it,
		// or drift would report it after every install.
		if l := o.GetLabels(); l[managedByLabel] != "" && l[managedByLabel] != managedByHelm {
			l[managedByLabel] = managedByHelm
			o.SetLabels(l)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[helmkube.ResourcePolicyAnno] = helmkube.KeepPolicy
			o.SetAnnotations(a)
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return &out, nil
}

// Summary is a one-line description of a release for logs and errors.
func Summary(rel *release.Release) string {
	if rel == nil {
		return "(none)"
	}
	ch := "?"
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		ch = rel.Chart.Metadata.Name + " " + rel.Chart.Metadata.Version
	}
	return fmt.Sprintf("%s/%s revision %d (%s, %s)", rel.Namespace, rel.Name, rel.Version, ch, strings.ToLower(rel.Info.Status.String()))
}
