package helm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Conflict rules: pairs of installs that cannot live in one cluster as
// configured (Kueue taking the pods Volcano must schedule; next, JobSet,
// Trainer or the MPI operator against Kueue's integrations).
//
// The rules run at plan time against the live cluster and against the other
// installs planned in the same run: Terraform plans every resource of one
// provider configuration in one provider process, which sees each plan
// through a registry keyed by the run's client. Whichever of two conflicting
// resources is planned second fails. They run again at apply time against the
// live cluster, for plans made before the cluster changed.
//
// Adding a rule: write its Check in a file of its own (see
// conflict_kueue_volcano.go), reading the planned installs it is given and
// the cluster through the charts' live lookups (LiveKueue, LiveVolcano), and
// list it in rules.

// An Install is one chart's release, as planned in this run or found in the
// cluster.
type Install struct {
	Chart     string // the chart's Product ("Kueue")
	Namespace string
	Name      string
	// Config is the chart's configuration type (KueueConfig, VolcanoConfig),
	// or nil for a chart without one.
	Config Config
	// Found says how an install found in the cluster was found ("ConfigMap
	// kueue-manager-config"); empty for a planned one.
	Found string
	// Replaces is the ID of the live install a planned one replaces (its
	// namespace changed), which the rules do not hold against it.
	Replaces string
}

// ID is the release's "namespace/name".
func (in Install) ID() string { return in.Namespace + "/" + in.Name }

// A Conflict is what a rule found wrong with an install.
type Conflict struct {
	Summary string // the diagnostic's title
	Detail  string // what is in the way and what to change
}

// A Rule is one conflict between installs.
type Rule struct {
	// Charts are the products whose installs the rule judges.
	Charts []string
	// Check returns the conflict of installing in (nil when there is none).
	// planned are the other installs planned in this run, sorted by chart
	// and ID; c reaches the cluster.
	Check func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error)
}

// rules are every conflict rule, in the order they are checked.
var rules = []Rule{
	kueueVolcano,
	trainerNeedsJobSet,
	oneJobSet,
	oneTrainer,
	mpiJobControllers,
	oneKServe,
	kserveKnativeMode,
}

// CheckConflicts records in as planned in the run of c and returns the first
// conflict of the rules that judge its chart (nil when there is none).
func CheckConflicts(ctx context.Context, c *kube.Client, in Install) (*Conflict, error) {
	planned := runOf(c).plan(in)
	for _, r := range rules {
		if !slices.Contains(r.Charts, in.Chart) {
			continue
		}
		if conflict, err := r.Check(ctx, c, in, planned); conflict != nil || err != nil {
			return conflict, err
		}
	}
	return nil, nil
}

// run is what one provider run (one configured client) has planned.
type run struct {
	mu      sync.Mutex
	planned map[string]Install // chart + " " + namespace/name → install
}

var runs sync.Map // *kube.Client → *run

func runOf(c *kube.Client) *run {
	v, _ := runs.LoadOrStore(c, &run{planned: map[string]Install{}})
	return v.(*run)
}

// plan records in and returns the other installs planned, sorted by chart
// and ID.
func (r *run) plan(in Install) []Install {
	r.mu.Lock()
	defer r.mu.Unlock()
	self := in.Chart + " " + in.ID()
	r.planned[self] = in
	var out []Install
	for k, p := range r.planned {
		if k != self {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Chart != out[j].Chart {
			return out[i].Chart < out[j].Chart
		}
		return out[i].ID() < out[j].ID()
	})
	return out
}

// ofChart returns the installs of one chart.
func ofChart(installs []Install, chart string) []Install {
	var out []Install
	for _, in := range installs {
		if in.Chart == chart {
			out = append(out, in)
		}
	}
	return out
}

// hcl renders a list of strings as an HCL list, for the fix to suggest.
func hcl(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
