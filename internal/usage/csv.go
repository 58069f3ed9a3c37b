package usage

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Dimensions splits a groupBy ("creator,label:team") into whether it
// groups by creator and the label keys, in order. It does not validate:
// the API has by the time anything is rendered.
func Dimensions(groupBy string) (creator bool, labels []string) {
	for _, d := range strings.Split(groupBy, ",") {
		d = strings.TrimSpace(d)
		if d == "creator" {
			creator = true
		} else if k, ok := strings.CutPrefix(d, "label:"); ok {
			labels = append(labels, k)
		}
	}
	return creator, labels
}

// Header is the CSV header for a response grouped by groupBy.
func Header(groupBy string) []string {
	h := append([]string{"start", "end"}, GroupHeader(groupBy)...)
	return append(h, "gpuHours", "cpuHours", "memoryGibHours", "gpuHoursUsed", "gpuHoursIdle")
}

// GroupHeader is the header of the columns that name a row's tenant and
// group: tenant, then creator and a label:<key> per label grouped by.
func GroupHeader(groupBy string) []string {
	creator, labels := Dimensions(groupBy)
	h := []string{"tenant"}
	if creator {
		h = append(h, "creator")
	}
	for _, k := range labels {
		h = append(h, "label:"+k)
	}
	return h
}

// Record is one row as CSV fields, in Header's order.
func Record(r *pb.UsageRow, groupBy string) []string {
	rec := append([]string{stamp(r.GetStart().AsTime()), stamp(r.GetEnd().AsTime())}, Group(r, groupBy)...)
	return append(rec, Number(r.GetGpuHours()), Number(r.GetCpuHours()), Number(r.GetMemoryGibHours()),
		Number(r.GetGpuHoursUsed()), Number(r.GetGpuHoursIdle()))
}

// Group is the row's tenant and group, in GroupHeader's order.
func Group(r *pb.UsageRow, groupBy string) []string {
	creator, labels := Dimensions(groupBy)
	rec := []string{r.GetTenant()}
	if creator {
		rec = append(rec, r.GetCreator())
	}
	for _, k := range labels {
		rec = append(rec, r.GetLabels()[k])
	}
	return rec
}

// WriteCSV writes resp as CSV: the header, then a record per row.
func WriteCSV(w io.Writer, resp *pb.QueryUsageResponse) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header(resp.GetGroupBy())); err != nil {
		return err
	}
	for _, r := range resp.GetRows() {
		if err := cw.Write(Record(r, resp.GetGroupBy())); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Number is a double as JSON writes it: the shortest decimal that reads
// back as the same value.
func Number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
