package training

import (
	"math"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
)

// record maps a finished run onto the model's computed attributes.
// nodes_tested stays as planned: the workers were pinned to those nodes.
func record(m *checkModel, o *outcome) {
	r, ev := o.Result, o.Eval
	m.BusBW = types.Float64Value(round(ev.MeasuredBusBW))
	m.BusBWAtBytes = types.Int64Value(r.MaxBusBWAtSize)
	m.AvgBusBW = types.Float64Value(round(ev.AvgBusBW))
	m.Ratio = types.Float64Value(round(ev.Ratio))
	m.Verdict = types.StringValue(string(ev.Verdict))
	m.OutOfBounds = types.Int64Value(ev.OutOfBounds)
	m.Transport = types.StringValue(string(r.Net.Transport))
	m.NCCLVersion = types.StringValue(r.NCCLVersion)
	m.Results = rows(r.Rows)
	m.RanAt = types.StringValue(o.RanAt.UTC().Format(time.RFC3339))
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
