package helm

// LWS is the LeaderWorkerSet controller's chart: upstream's OCI chart, whose
// versions are the LWS releases without the "v" (the sigs.k8s.io/lws module
// ships the same chart as version 0.1.0). Its settings are the user's values
// alone: no typed configuration.
var LWS = Chart{
	Product:   "LeaderWorkerSet",
	Default:   Source{Repository: "oci://registry.k8s.io/lws/charts", Name: "lws", Version: "0.7.0"},
	Release:   "lws",
	Namespace: "lws-system",
}
