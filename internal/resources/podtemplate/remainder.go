package podtemplate

import (
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// What an imported template says beyond the typed attributes: it becomes the
// pod_template overlay, so that the configuration Terraform generates from
// an import reproduces the object, and nothing is lost when it is applied.

// Remainder is the part of a live pod template that the typed attributes of
// m do not carry, without the server's defaults: list elements matched by
// their merge key (which stays in each element). Nil when there is none.
func Remainder(live map[string]any, m *Template) map[string]any {
	r, _ := remainder(live, m.typedObject(), "", nil).(map[string]any)
	if len(r) == 0 {
		return nil
	}
	return r
}

func remainder(live, typed any, field string, parent map[string]any) any {
	switch l := live.(type) {
	case map[string]any:
		t, isMap := typed.(map[string]any)
		if typed != nil && !isMap {
			return nil
		}
		if typed != nil && len(l) == 0 {
			return nil // {} and the typed attribute says it
		}
		out := map[string]any{}
		for k, v := range l {
			if serverDefault(k, v, l) {
				continue
			}
			tv, has := t[k]
			if !has {
				if r := remainder(v, nil, k, l); r != nil {
					out[k] = r
				}
				continue
			}
			if r := remainder(v, tv, k, l); !empty(r) {
				out[k] = r
			}
		}
		if typed == nil && len(out) == 0 && len(l) > 0 {
			return nil // only defaults
		}
		return out
	case []any:
		key := mergeKeys[field]
		t, isList := typed.([]any)
		if typed != nil && (!isList || key == "") {
			return nil // the typed attribute carries the whole list
		}
		var out []any
		for _, el := range l {
			m, ok := el.(map[string]any)
			if !ok || key == "" {
				out = append(out, el)
				continue
			}
			var match any
			if t != nil {
				if found := find(t, key, elementKey(el, key)); found != nil {
					match = found
				}
			}
			if match == nil {
				r, _ := remainder(m, map[string]any{}, "", nil).(map[string]any)
				if r == nil {
					r = map[string]any{}
				}
				r[key] = m[key]
				out = append(out, r)
				continue
			}
			r, _ := remainder(m, match, "", nil).(map[string]any)
			delete(r, key)
			if len(r) > 0 {
				r[key] = m[key]
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	if typed != nil {
		return nil
	}
	return live
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// serverDefault says whether field k of the map parent, with value v, is one
// the API server fills in when it is unset (in a Pod or a workload's pod
// template; CRDs' templates have none of them).
func serverDefault(k string, v any, parent map[string]any) bool {
	_, isPodSpec := parent["containers"]
	isProbe := parent["httpGet"] != nil || parent["tcpSocket"] != nil || parent["exec"] != nil || parent["grpc"] != nil
	switch k {
	case "terminationMessagePath":
		return v == "/dev/termination-log"
	case "terminationMessagePolicy":
		return v == "File"
	case "imagePullPolicy":
		image, _ := parent["image"].(string)
		return v == defaultPullPolicy(image)
	case "protocol":
		return v == "TCP"
	case "scheme":
		return v == defaultHTTPProto
	case "dnsPolicy":
		return isPodSpec && v == "ClusterFirst"
	case "restartPolicy":
		return isPodSpec && v == "Always"
	case "schedulerName":
		return isPodSpec && v == "default-scheduler"
	case "terminationGracePeriodSeconds":
		n, ok := kube.Number(v)
		return isPodSpec && ok && n == 30
	case "enableServiceLinks":
		return isPodSpec && v == true
	case "serviceAccount": // the deprecated copy of serviceAccountName
		return isPodSpec && v == parent["serviceAccountName"]
	case "securityContext", "resources", "metadata": // {} says nothing
		m, ok := v.(map[string]any)
		return ok && len(m) == 0
	case "readOnly": // absent means false
		return v == false
	case "type": // a hostPath without a check
		_, isHostPath := parent["path"]
		return isHostPath && v == ""
	case "creationTimestamp":
		return v == nil
	case "defaultMode":
		n, ok := kube.Number(v)
		return ok && n == defaultMode
	case "apiVersion":
		_, isFieldRef := parent["fieldPath"]
		return isFieldRef && v == "v1"
	case "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold":
		n, ok := kube.Number(v)
		def := map[string]float64{"periodSeconds": defaultPeriod, "timeoutSeconds": defaultTimeout,
			"successThreshold": defaultSuccess, "failureThreshold": defaultFailure}[k]
		return isProbe && ok && n == def
	}
	return false
}

// remainderOverlay is the pod_template of an import: the remainder as YAML,
// null when the typed attributes carry everything.
func remainderOverlay(live map[string]any, m *Template) types.String {
	r := Remainder(live, m)
	if r == nil {
		return types.StringNull()
	}
	b, err := yaml.Marshal(r)
	if err != nil {
		return types.StringNull()
	}
	return types.StringValue(string(b))
}
