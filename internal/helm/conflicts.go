package helm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
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

// FactKey keys a planned install in the run's registry (internal/planned).
func (in Install) FactKey() string { return in.Chart + " " + in.ID() }

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

// CheckConflicts records in as planned in the run of c (internal/planned,
// the registry every resource of the run records its plan in) and returns
// the first conflict of the rules that judge its chart (nil when there is
// none).
func CheckConflicts(ctx context.Context, c *kube.Client, in Install) (*Conflict, error) {
	others := plan(planned.Of(c), in)
	for _, r := range rules {
		if !slices.Contains(r.Charts, in.Chart) {
			continue
		}
		if conflict, err := r.Check(ctx, c, in, others); conflict != nil || err != nil {
			return conflict, err
		}
	}
	return nil, nil
}

// plan records in as planned in run and returns the other installs
// planned, sorted by chart and ID.
func plan(run *planned.Run, in Install) []Install {
	planned.Record(run, in)
	others := planned.Others[Install](run, in.FactKey())
	sort.SliceStable(others, func(i, j int) bool {
		if others[i].Chart != others[j].Chart {
			return others[i].Chart < others[j].Chart
		}
		return others[i].ID() < others[j].ID()
	})
	return others
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
