package helm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

// decodeRecord reads what Helm's own Secrets driver writes: three revisions
// stored by the driver, the newest by version label decoded alone, equal to
// the driver's own reading of it.
func TestDecodeRecordReadsHelmsSecrets(t *testing.T) {
	secrets := fake.NewSimpleClientset().CoreV1().Secrets("ns")
	d := driver.NewSecrets(secrets)
	for v := 1; v <= 3; v++ {
		rel := &release.Release{Name: "r", Namespace: "ns", Version: v, Manifest: "kind: ConfigMap\n",
			Info: &release.Info{Status: release.StatusSuperseded}, Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "c", Version: "1.0.0"}}}
		if err := d.Create(fmt.Sprintf("sh.helm.release.v1.r.v%d", v), rel); err != nil {
			t.Fatal(err)
		}
	}
	list, err := secrets.List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=r"})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("listing: %d records, %v", len(list.Items), err)
	}
	for _, s := range list.Items {
		got, err := decodeRecord(s.Data["release"])
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.Get(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != want.Version || got.Manifest != want.Manifest || got.Chart.Metadata.Version != "1.0.0" || s.Labels["version"] != fmt.Sprint(got.Version) {
			t.Errorf("record %s: decoded version %d manifest %q, Helm's %d %q, label %s", s.Name, got.Version, got.Manifest, want.Version, want.Manifest, s.Labels["version"])
		}
	}
}

// splitDocuments cuts a stream into the documents Helm's SplitManifests
// finds, in order. (Helm's expression leaves a "---" at the head of the
// document after an empty one; both parse to the same object.)
func TestSplitDocumentsAgreesWithHelm(t *testing.T) {
	for _, stream := range []string{
		"",
		"---\n",
		"a: 1\n",
		"---\n# Source: c/templates/a.yaml\na: 1\n---\n# Source: c/templates/b.yaml\nb: |\n  x\n  ---\n  y\n",
		"a: 1\n---\n\n---\nb: 2\n---   \nc: 3",
		"--- \nkind: List\nitems: []\n---\r\nd: 4\r\n",
	} {
		docs := releaseutil.SplitManifests(stream)
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		var want []string
		for _, k := range keys {
			want = append(want, parsed(t, docs[k]))
		}
		var got []string
		for _, d := range splitDocuments(stream) {
			got = append(got, parsed(t, d))
		}
		if !slices.Equal(got, want) {
			t.Errorf("splitDocuments(%q) = %q, Helm's SplitManifests %q", stream, got, want)
		}
	}
}

func parsed(t *testing.T, doc string) string {
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v)
}
