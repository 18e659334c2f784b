// Package catalog states the facts of the upstream products the provider
// installs and writes, once: their API kinds (with the versions they are
// served at and the conversions between them), the labels and annotations
// their controllers read, where their charts are and which version is the
// default, the namespace and release they install into. One file per
// product. The resources, the Helm package, the cross-resource rules and
// the test environment's adapters read them from here; nothing else states
// them again.
//
// Only plain data and pure conversions: no I/O, no framework.
package catalog
