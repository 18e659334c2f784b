package training

import (
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
)

// record maps a finished run onto the model's computed attributes: the
// verdict, busbw_gbps, busbw_at_bytes and ratio all come from the
// largest-size row (the table's last), the one the verdict judged. A run
// that is recorded but not good (acceptable; bad with fail_on = never)
// comes back as a warning with the numbers and the checklist.
// nodes_tested stays as planned: the workers were pinned to those nodes.
func record(m *checkModel, o *outcome) diag.Diagnostics {
	r, ev := o.Result, o.Eval
	m.BusBW = types.Float64Value(round(ev.MeasuredBusBW))
	m.BusBWAtBytes = types.Int64Value(ev.MeasuredAtSize)
	m.AvgBusBW = types.Float64Null()
	if ev.AvgSeen {
		m.AvgBusBW = types.Float64Value(round(ev.AvgBusBW))
	}
	m.Ratio = types.Float64Value(round(ev.Ratio))
	m.Verdict = types.StringValue(string(ev.Verdict))
	m.OutOfBounds = types.Int64Value(ev.OutOfBounds)
	m.Transport = types.StringValue(string(r.Net.Transport))
	m.NCCLVersion = types.StringValue(r.NCCLVersion)
	m.Results = rows(r.Rows)
	m.RanAt = types.StringValue(o.RanAt.UTC().Format(time.RFC3339))
	var diags diag.Diagnostics
	if summary, detail, ok := warning(o); ok {
		diags.AddWarning(summary, detail)
	}
	return diags
}

// warning is what an acceptable run — or a bad one that fail_on = never
// records — says at apply: the verdict, the numbers and the checklist.
func warning(o *outcome) (summary, detail string, ok bool) {
	ev := o.Eval
	if ev.Verdict == fabric.VerdictGood || !ev.Verdict.Bandwidth() {
		return "", "", false
	}
	summary = fmt.Sprintf("NCCL check %s/%s: %s (%.1f%% of the peak at the largest size)", o.Input.Namespace, o.Input.JobName, ev.Verdict, 100*ev.Ratio)
	why := fmt.Sprintf("The check is recorded (fail_on = %s), but the fabric is not good: training runs at the bandwidth below. "+
		"Set fail_on = \"acceptable\" to fail the apply instead.", o.Input.FailOn)
	if ev.Verdict == fabric.VerdictBad {
		why = "The check is recorded only because fail_on = never: the fabric is bad."
	}
	return summary, why + "\n" + fabric.Message(o.Result, &ev, o.Input, nil), true
}

// round keeps four decimals: nccl-tests prints two, and a ratio needs no more.
func round(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func rows(in []fabric.Row) types.List {
	typ := types.ObjectType{AttrTypes: rowTypes}
	elems := make([]attr.Value, 0, len(in))
	for _, r := range in {
		v := map[string]attr.Value{
			"size_bytes": types.Int64Value(r.SizeBytes),
			"count":      types.Int64Value(r.Count),
			"type":       types.StringValue(r.Type),
			"redop":      types.StringValue(r.Redop),
			"time_us":    types.Float64Value(r.OutOfPlace.TimeUS),
			"algbw_gbps": types.Float64Value(r.OutOfPlace.AlgBW),
			"busbw_gbps": types.Float64Value(r.OutOfPlace.BusBW),
			"wrong":      types.Int64Value(r.OutOfPlace.Wrong),

			"in_place_time_us":    types.Float64Null(),
			"in_place_algbw_gbps": types.Float64Null(),
			"in_place_busbw_gbps": types.Float64Null(),
			"in_place_wrong":      types.Int64Null(),
		}
		if ip := r.InPlace; ip != nil {
			v["in_place_time_us"] = types.Float64Value(ip.TimeUS)
			v["in_place_algbw_gbps"] = types.Float64Value(ip.AlgBW)
			v["in_place_busbw_gbps"] = types.Float64Value(ip.BusBW)
			v["in_place_wrong"] = types.Int64Value(ip.Wrong)
		}
		elems = append(elems, types.ObjectValueMust(rowTypes, v))
	}
	return types.ListValueMust(typ, elems)
}
