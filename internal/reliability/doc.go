// Package reliability holds the provider's fault-injection, bad-input and
// security suites (acceptance tests against a local cluster): the API server
// stopped mid-apply, slow or dropping, every resource edited and deleted out
// of band, dozens of invalid configurations, credentials kept out of logs and
// state, and the least-privilege ClusterRole of the docs. RELIABILITY.md at
// the repository root tabulates what they inject and what comes out.
package reliability
