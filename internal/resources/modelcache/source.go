package modelcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Source URIs: where the weights come from, and how a default downloader
// fetches them. Every default runs `sh -c` with a script that reads only
// environment variables (nothing from the URI is pasted into shell text),
// writes into $MODEL_CACHE_DIR, and prints a progress line every 15 s.

// Scheme of a source URI.
type Scheme string

const (
	SchemeHF    Scheme = "hf"
	SchemeS3    Scheme = "s3"
	SchemeGS    Scheme = "gs"
	SchemeOCI   Scheme = "oci"
	SchemeHTTPS Scheme = "https"
)

// Schemes lists the supported schemes in documentation order.
var Schemes = []Scheme{SchemeHF, SchemeS3, SchemeGS, SchemeOCI, SchemeHTTPS}

// Source is a parsed source URI.
type Source struct {
	Scheme Scheme
	URI    string
	// Env are the downloader's variables derived from the URI (MODEL_REPO,
	// MODEL_BUCKET and MODEL_PREFIX, MODEL_REF, MODEL_URL).
	Env map[string]string
	// Tag is the tag or digest an oci:// URI names, if any.
	Tag string
}

var (
	hfRepoPart   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	bucketName   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]$`)
	ociReference = regexp.MustCompile(`^[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+((:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})|(@sha256:[a-f0-9]{64}))?$`)
)

// ParseSource parses and checks a source URI. Errors say what is expected.
func ParseSource(uri string) (Source, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return Source{}, fmt.Errorf("%q has no scheme: expected one of %s", uri, schemeList())
	}
	s := Source{Scheme: Scheme(scheme), URI: uri, Env: map[string]string{}}
	switch s.Scheme {
	case SchemeHF:
		parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
		if len(parts) > 2 || rest == "" {
			return Source{}, fmt.Errorf("%q: a Hugging Face source is hf://<org>/<model> (or hf://<model>); pin the revision with `revision`, not in the URI", uri)
		}
		for _, p := range parts {
			if !hfRepoPart.MatchString(p) || strings.Contains(p, "..") || strings.Contains(p, "--") {
				return Source{}, fmt.Errorf("%q: %q is not a valid Hugging Face repository name part", uri, p)
			}
		}
		s.Env["MODEL_REPO"] = strings.Join(parts, "/")
	case SchemeS3, SchemeGS:
		bucket, prefix, _ := strings.Cut(rest, "/")
		if !bucketName.MatchString(bucket) || strings.Contains(bucket, "..") {
			return Source{}, fmt.Errorf("%q: %q is not a valid bucket name (3-63 lower-case letters, digits, '.', '-', '_')", uri, bucket)
		}
		if strings.ContainsAny(prefix, "\x00\n\r") {
			return Source{}, fmt.Errorf("%q: the prefix contains control characters", uri)
		}
		s.Env["MODEL_BUCKET"] = bucket
		s.Env["MODEL_PREFIX"] = prefix
	case SchemeOCI:
		if !ociReference.MatchString(rest) {
			return Source{}, fmt.Errorf("%q: an OCI source is oci://<registry>/<repository>[:<tag>|@sha256:<digest>]", uri)
		}
		s.Env["MODEL_REF"] = rest
		if i := strings.Index(rest, "@"); i >= 0 {
			s.Tag = rest[i+1:]
		} else if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
			s.Tag = rest[i+1:]
		}
	case SchemeHTTPS:
		u, err := url.Parse(uri)
		if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" || strings.HasSuffix(u.Path, "/") {
			return Source{}, fmt.Errorf("%q: an HTTPS source is the URL of one file (a .tar, .tar.gz or .tgz archive is unpacked)", uri)
		}
		if u.User != nil {
			return Source{}, fmt.Errorf("%q: credentials do not belong in the URI; put an Authorization header value in the Secret of secret_ref (key HTTP_AUTHORIZATION)", redactUser(u))
		}
		s.Env["MODEL_URL"] = uri
	case "http":
		return Source{}, fmt.Errorf("%q: plain http is not accepted; use https://", uri)
	default:
		return Source{}, fmt.Errorf("%q: unknown scheme %q: expected one of %s", uri, scheme, schemeList())
	}
	return s, nil
}

func redactUser(u *url.URL) string {
	c := *u
	c.User = url.User("REDACTED")
	return c.String()
}

func schemeList() string {
	out := make([]string, len(Schemes))
	for i, s := range Schemes {
		out[i] = string(s) + "://"
	}
	return strings.Join(out, ", ")
}

// EffectiveRevision is the revision a warm-up fetches: revision when set,
// else the scheme's: "main" for Hugging Face, the URI's tag (or "latest") for
// OCI, "latest" (whatever the location holds) for buckets and URLs.
func (s Source) EffectiveRevision(revision string) string {
	if revision != "" {
		return revision
	}
	switch s.Scheme {
	case SchemeHF:
		return "main"
	case SchemeOCI:
		if s.Tag != "" {
			return s.Tag
		}
	}
	return "latest"
}

// CheckRevision reports a revision that cannot apply to the source.
func (s Source) CheckRevision(revision string) error {
	if revision == "" {
		return nil
	}
	if strings.ContainsAny(revision, "\x00\n\r") {
		return fmt.Errorf("revision %q contains control characters", revision)
	}
	if s.Scheme == SchemeOCI && s.Tag != "" && revision != s.Tag {
		return fmt.Errorf("the URI already names %q; set the tag or digest in one place only", s.Tag)
	}
	return nil
}

// downloadEnv are the scheme-specific variables, with the revision folded in
// where the downloader needs it (an OCI reference without a tag gets it).
func (s Source) downloadEnv(revision string) map[string]string {
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	if s.Scheme == SchemeOCI && s.Tag == "" {
		sep := ":"
		if strings.HasPrefix(revision, "sha256:") {
			sep = "@"
		}
		env["MODEL_REF"] = s.Env["MODEL_REF"] + sep + s.EffectiveRevision(revision)
	}
	return env
}

var unsafeDirChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SubPath is the directory, inside the cache's volume, that holds one
// revision of one source: readable (the revision) and unique (a hash of the
// URI and revision), so a new revision is fetched beside the old one and
// consumers switch only once it is complete.
func SubPath(uri, effectiveRevision string) string {
	sum := sha256.Sum256([]byte(uri + "\n" + effectiveRevision))
	name := strings.Trim(unsafeDirChars.ReplaceAllString(effectiveRevision, "-"), "-.")
	if len(name) > 40 {
		name = name[:40]
	}
	if name == "" {
		name = "rev"
	}
	return name + "-" + hex.EncodeToString(sum[:])[:8]
}

// Downloader is the container that fetches the weights.
type Downloader struct {
	Image   string
	Command []string
	Args    []string
}

// progressLoop prints the directory's size every 15 s in the form the
// provider parses (bytes=N files=N); the main script kills it at the end.
const progressLoop = `set -eu
mkdir -p "$MODEL_CACHE_DIR"
( while sleep 15; do
    kib=$(du -sk "$MODEL_CACHE_DIR" 2>/dev/null | cut -f1)
    echo "model-cache: progress bytes=$(( ${kib:-0} * 1024 )) files=$(find "$MODEL_CACHE_DIR" -type f 2>/dev/null | wc -l)"
  done ) &
progress=$!
`

const progressEnd = `kill "$progress" 2>/dev/null || true
echo "model-cache: download finished"
`

// Default downloaders. Each image runs as root (the volume's root directory
// belongs to root) and has a POSIX shell, du and find.
var defaultDownloaders = map[Scheme]struct {
	image, script string
}{
	SchemeHF: {"python:3.12-slim", `pip install --quiet --no-cache-dir --disable-pip-version-check --root-user-action=ignore 'huggingface_hub[hf_transfer]>=0.34'
# hf (formerly huggingface-cli) reads HF_TOKEN from the environment (secret_ref).
HF_HUB_ENABLE_HF_TRANSFER=1 hf download "$MODEL_REPO" --revision "$MODEL_REVISION" --local-dir "$MODEL_CACHE_DIR"
`},
	SchemeS3: {"amazon/aws-cli:2.17.0", `# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL come from secret_ref (or IRSA / Pod Identity).
aws s3 sync --only-show-errors "s3://$MODEL_BUCKET/$MODEL_PREFIX" "$MODEL_CACHE_DIR"
`},
	SchemeGS: {"gcr.io/google.com/cloudsdktool/google-cloud-cli:499.0.0-slim", `# A service account key as key credentials.json of secret_ref, else Workload Identity.
if [ -f /var/run/secrets/model-cache/credentials.json ]; then
  gcloud auth activate-service-account --quiet --key-file=/var/run/secrets/model-cache/credentials.json
fi
gcloud storage rsync --recursive "gs://$MODEL_BUCKET/$MODEL_PREFIX" "$MODEL_CACHE_DIR"
`},
	SchemeOCI: {"ghcr.io/oras-project/oras:v1.2.0", `# ORAS_USERNAME and ORAS_PASSWORD come from secret_ref, for private registries.
set --
if [ -n "${ORAS_USERNAME:-}" ]; then set -- --username "$ORAS_USERNAME" --password "$ORAS_PASSWORD"; fi
oras pull "$@" --output "$MODEL_CACHE_DIR" "$MODEL_REF"
`},
	SchemeHTTPS: {"alpine:3.21", `# HTTP_AUTHORIZATION (e.g. "Bearer <token>") comes from secret_ref.
set -- -q -O "$MODEL_CACHE_DIR/.download"
if [ -n "${HTTP_AUTHORIZATION:-}" ]; then set -- "$@" --header "Authorization: $HTTP_AUTHORIZATION"; fi
wget "$@" "$MODEL_URL"
case "${MODEL_URL%%\?*}" in
  *.tar.gz|*.tgz) tar -xzf "$MODEL_CACHE_DIR/.download" -C "$MODEL_CACHE_DIR" && rm "$MODEL_CACHE_DIR/.download" ;;
  *.tar) tar -xf "$MODEL_CACHE_DIR/.download" -C "$MODEL_CACHE_DIR" && rm "$MODEL_CACHE_DIR/.download" ;;
  *) name=${MODEL_URL%%\?*}; mv "$MODEL_CACHE_DIR/.download" "$MODEL_CACHE_DIR/${name##*/}" ;;
esac
`},
}

// DefaultDownloader is the downloader used for a scheme unless overridden.
func DefaultDownloader(s Scheme) Downloader {
	d, ok := defaultDownloaders[s]
	if !ok {
		return Downloader{}
	}
	return Downloader{Image: d.image, Command: []string{"sh", "-c", progressLoop + d.script + progressEnd}}
}

// SecretKeys documents, per scheme, the Secret keys the default downloader reads.
var SecretKeys = map[Scheme]string{
	SchemeHF:    "`HF_TOKEN`",
	SchemeS3:    "`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and optionally `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`)",
	SchemeGS:    "`credentials.json` (a service account key, mounted as a file)",
	SchemeOCI:   "`ORAS_USERNAME`, `ORAS_PASSWORD`",
	SchemeHTTPS: "`HTTP_AUTHORIZATION` (the Authorization header's value)",
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
