package modelcache

import (
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		uri    string
		scheme Scheme
		env    map[string]string
		tag    string
		err    string
	}{
		{uri: "hf://meta-llama/Llama-3.1-70B-Instruct", scheme: SchemeHF, env: map[string]string{"MODEL_REPO": "meta-llama/Llama-3.1-70B-Instruct"}},
		{uri: "hf://gpt2", scheme: SchemeHF, env: map[string]string{"MODEL_REPO": "gpt2"}},
		{uri: "hf://org/model/extra", err: "hf://<org>/<model>"},
		{uri: "hf://org/mo del", err: "not a valid Hugging Face"},
		{uri: "hf://", err: "hf://<org>/<model>"},
		{uri: "s3://my-bucket/models/llama", scheme: SchemeS3, env: map[string]string{"MODEL_BUCKET": "my-bucket", "MODEL_PREFIX": "models/llama"}},
		{uri: "s3://my-bucket", scheme: SchemeS3, env: map[string]string{"MODEL_BUCKET": "my-bucket", "MODEL_PREFIX": ""}},
		{uri: "s3://My_Bucket/x", err: "not a valid bucket"},
		{uri: "gs://bucket.example/a/b", scheme: SchemeGS, env: map[string]string{"MODEL_BUCKET": "bucket.example", "MODEL_PREFIX": "a/b"}},
		{uri: "oci://ghcr.io/org/models/llama:v1", scheme: SchemeOCI, env: map[string]string{"MODEL_REF": "ghcr.io/org/models/llama:v1"}, tag: "v1"},
		{uri: "oci://localhost:5000/llama", scheme: SchemeOCI, env: map[string]string{"MODEL_REF": "localhost:5000/llama"}},
		{uri: "oci://ghcr.io/org/llama@sha256:" + strings.Repeat("a", 64), scheme: SchemeOCI, tag: "sha256:" + strings.Repeat("a", 64)},
		{uri: "oci://ghcr.io", err: "oci://<registry>/<repository>"},
		{uri: "https://example.com/model.tar.gz", scheme: SchemeHTTPS, env: map[string]string{"MODEL_URL": "https://example.com/model.tar.gz"}},
		{uri: "https://example.com/", err: "one file"},
		{uri: "https://user:secret@example.com/m.bin", err: "credentials do not belong"},
		{uri: "http://example.com/m.bin", err: "plain http"},
		{uri: "ftp://example.com/m.bin", err: `unknown scheme "ftp"`},
		{uri: "meta-llama/Llama-3.1-70B", err: "has no scheme"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			s, err := ParseSource(tc.uri)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error %q, got %v", tc.err, err)
				}
				if strings.Contains(err.Error(), ":secret@") {
					t.Errorf("the error repeats the credentials: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Scheme != tc.scheme || s.Tag != tc.tag {
				t.Errorf("scheme %s tag %q", s.Scheme, s.Tag)
			}
			for k, v := range tc.env {
				if s.Env[k] != v {
					t.Errorf("%s = %q, want %q", k, s.Env[k], v)
				}
			}
		})
	}
}

func TestRevisions(t *testing.T) {
	hf, _ := ParseSource("hf://org/model")
	s3, _ := ParseSource("s3://bucket/p")
	tagged, _ := ParseSource("oci://ghcr.io/org/llama:v1")
	untagged, _ := ParseSource("oci://ghcr.io/org/llama")
	for _, tc := range []struct {
		src        Source
		rev, want  string
		wantRefEnv string
	}{
		{hf, "", "main", ""},
		{hf, "0123abc", "0123abc", ""},
		{s3, "", "latest", ""},
		{tagged, "", "v1", "ghcr.io/org/llama:v1"},
		{untagged, "", "latest", "ghcr.io/org/llama:latest"},
		{untagged, "v2", "v2", "ghcr.io/org/llama:v2"},
		{untagged, "sha256:abc", "sha256:abc", "ghcr.io/org/llama@sha256:abc"},
	} {
		if got := tc.src.EffectiveRevision(tc.rev); got != tc.want {
			t.Errorf("%s revision %q: %q, want %q", tc.src.URI, tc.rev, got, tc.want)
		}
		if tc.wantRefEnv != "" {
			if got := tc.src.downloadEnv(tc.rev)["MODEL_REF"]; got != tc.wantRefEnv {
				t.Errorf("%s revision %q: MODEL_REF %q, want %q", tc.src.URI, tc.rev, got, tc.wantRefEnv)
			}
		}
	}
	if err := tagged.CheckRevision("v2"); err == nil || !strings.Contains(err.Error(), "one place") {
		t.Errorf("tag twice: %v", err)
	}
	if err := tagged.CheckRevision("v1"); err != nil {
		t.Error(err)
	}
}

func TestSubPath(t *testing.T) {
	a := SubPath("hf://org/model", "main")
	if !strings.HasPrefix(a, "main-") || len(a) != len("main-")+8 {
		t.Errorf("%q", a)
	}
	if SubPath("hf://org/model", "main") != a {
		t.Error("not deterministic")
	}
	if SubPath("hf://org/other", "main") == a || SubPath("hf://org/model", "v2") == a {
		t.Error("not unique per URI and revision")
	}
	if p := SubPath("s3://b/p", "refs/pr/../../etc"); strings.ContainsAny(p, "/") || strings.HasPrefix(p, ".") {
		t.Errorf("unsafe directory name %q", p)
	}
	if p := SubPath("s3://b/p", strings.Repeat("x", 100)); len(p) > 49 {
		t.Errorf("too long: %q", p)
	}
}

func str(s string) types.String { return types.StringValue(s) }

// Plan-time validation: every error names its attribute.
func TestValidate(t *testing.T) {
	base := func() *cacheModel {
		return &cacheModel{
			Name: str("llama"), Namespace: str("serving"),
			Source:       &sourceModel{URI: str("hf://org/model"), Revision: types.StringNull()},
			Mode:         str(ModePVC),
			Size:         str("100Gi"),
			StorageClass: types.StringNull(), AccessModes: types.ListNull(types.StringType),
			RetainOnDestroy: types.BoolValue(false),
			NodeSelector:    types.MapNull(types.StringType), HostPath: types.StringNull(), MountPath: types.StringNull(),
			Downloader: types.ObjectNull(downloaderTypes), PodAnnotations: types.MapNull(types.StringType),
			Timeout: str("60m"),
		}
	}
	selector := types.MapValueMust(types.StringType, map[string]attr.Value{"pool": str("h100")})
	for _, tc := range []struct {
		name  string
		edit  func(m *cacheModel)
		paths []string
	}{
		{"valid pvc", func(*cacheModel) {}, nil},
		{"valid node_local", func(m *cacheModel) { m.Mode, m.Size, m.NodeSelector = str(ModeNodeLocal), types.StringNull(), selector }, nil},
		{"unknown scheme", func(m *cacheModel) { m.Source.URI = str("ftp://x/y") }, []string{"source.uri"}},
		{"unknown uri skipped", func(m *cacheModel) { m.Source.URI = types.StringUnknown() }, nil},
		{"oci tag twice", func(m *cacheModel) { m.Source.URI, m.Source.Revision = str("oci://r.io/m:v1"), str("v2") }, []string{"source.revision"}},
		{"empty revision", func(m *cacheModel) { m.Source.Revision = str("") }, []string{"source.revision"}},
		{"pvc without size", func(m *cacheModel) { m.Size = types.StringNull() }, []string{"size"}},
		{"pvc with node_selector and host_path", func(m *cacheModel) { m.NodeSelector, m.HostPath = selector, str("/data") }, []string{"host_path", "node_selector"}},
		{"node_local without node_selector", func(m *cacheModel) { m.Mode, m.Size = str(ModeNodeLocal), types.StringNull() }, []string{"node_selector"}},
		{"node_local with claim settings", func(m *cacheModel) {
			m.Mode, m.NodeSelector, m.StorageClass, m.RetainOnDestroy = str(ModeNodeLocal), selector, str("nfs"), types.BoolValue(true)
		}, []string{"retain_on_destroy", "size", "storage_class"}},
		{"relative mount path", func(m *cacheModel) { m.MountPath = str("models") }, []string{"mount_path"}},
		{"unclean host path", func(m *cacheModel) {
			m.Mode, m.Size, m.NodeSelector, m.HostPath = str(ModeNodeLocal), types.StringNull(), selector, str("/var/lib/../x")
		}, []string{"host_path"}},
		{"bad timeout", func(m *cacheModel) { m.Timeout = str("an hour") }, []string{"timeout"}},
		{"timeout too short", func(m *cacheModel) { m.Timeout = str("5s") }, []string{"timeout"}},
		{"empty image", func(m *cacheModel) {
			m.Downloader = types.ObjectValueMust(downloaderTypes, map[string]attr.Value{"image": str(" "), "command": types.ListNull(types.StringType), "args": types.ListNull(types.StringType)})
		}, []string{"downloader.image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.edit(m)
			var got []string
			for _, d := range object.WithPaths(validate(m)) {
				dp, ok := d.(diag.DiagnosticWithPath)
				if !ok {
					t.Errorf("diagnostic without a path: %s: %s", d.Summary(), d.Detail())
					continue
				}
				if !strings.HasPrefix(d.Detail(), dp.Path().String()+": ") {
					t.Errorf("the message does not start with its path: %q", d.Detail())
				}
				got = append(got, dp.Path().String())
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.paths, ",") {
				t.Errorf("errors at %v, want %v: %v", got, tc.paths, validate(m))
			}
		})
	}
}
