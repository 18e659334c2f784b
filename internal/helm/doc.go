// Package helm installs, upgrades, checks and removes Helm charts with the
// Helm SDK, on the provider's own connection to the cluster, and holds what
// the provider knows of each chart it installs. It is the cluster side of
// the install engine's Helm back end (internal/resources/installs,
// release.go); the engine's other back end, a manifest set, is
// internal/manifests. The conflict rules here serve both: every install
// (a chart's or the MPI Operator's manifests) is an Install to them.
//
//   - chart.go: chart sources (local directory, chart repository, OCI) and
//     the Chart descriptor and Config interface every chart file fills in;
//   - values.go: values documents (parse, deep merge, paths);
//   - release.go: atomic install and upgrade with a readiness wait by kstatus
//     rules, uninstall that keeps CRDs unless asked; drift.go: drift of every
//     chart object against the live cluster (by dry-run server-side apply);
//   - kueue.go (+ kueue_config.go), volcano.go, kuberay.go, lws.go, jobset.go,
//     trainer.go (+ trainer_runtimes.go), kserve.go: one file per chart — its
//     defaults, its one configuration type, the values paths that
//     configuration is written to and read back from, and how to find an
//     install of it in the cluster;
//   - placeholders.go: values the provider fills in for a chart (the webhook
//     certificate of KServe);
//   - conflicts.go: the conflict rules between installs, one file per rule
//     (conflict_kueue_volcano.go, conflict_mpijob.go, conflict_kserve.go,
//     conflict_jobset_twice.go, conflict_trainer_jobset.go,
//     conflict_trainer_twice.go); the installs planned in the run are read
//     from the run's plan registry (internal/planned), where the rules of
//     other resources (internal/rules) read them too.
//
// Upgrades go through Helm's three-way patch, which leaves alone fields
// changed in the cluster when the chart did not change them; Upgrade then
// server-side applies (force, the provider's field manager, which is also
// Helm's) the objects that still differ, so a re-apply after drift puts
// everything back.
//
// Tests: the acceptance tests (internal/resources/installs) install the real
// Kueue and LWS charts (from the Go module cache), a stand-in KubeRay chart
// with KubeRay's own CRDs and a stand-in Volcano chart (testdata/charts/volcano)
// into the local cluster. testenv's pod runner runs the charts' controller
// pods as the real controller binaries, and its egress proxy routes the API
// server's calls to the charts' service-referenced webhooks to them, so
// objects are judged by the real webhooks with the charts' failure policies.
package helm
