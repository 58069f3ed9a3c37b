package server

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/trainyard/trainyard/internal/usage"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// mimeCSV is what a REST client asks for to get CSV (the usage API's
// chargeback export): Accept: text/csv, or format=csv in the query.
const mimeCSV = "text/csv"

// csvMarshaler answers the usage API as CSV (internal/usage); anything
// else it is asked to write, errors included, goes out as JSON.
type csvMarshaler struct{ runtime.Marshaler }

func (m csvMarshaler) Marshal(v any) ([]byte, error) {
	if resp, ok := v.(*pb.QueryUsageResponse); ok {
		var b bytes.Buffer
		err := usage.WriteCSV(&b, resp)
		return b.Bytes(), err
	}
	return m.Marshaler.Marshal(v)
}

func (m csvMarshaler) ContentType(v any) string {
	if _, ok := v.(*pb.QueryUsageResponse); ok {
		return "text/csv; charset=utf-8"
	}
	return m.Marshaler.ContentType(v)
}

// acceptCSV turns format=csv, or an Accept header that names text/csv
// among others or with parameters, into the Accept: text/csv the gateway
// picks the CSV marshaler by (it matches the header's value exactly).
func acceptCSV(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
		q := r.URL.Query()
		csv := strings.EqualFold(q.Get("format"), "csv")
		if q.Has("format") {
			q.Del("format")
			r.URL.RawQuery = q.Encode()
		}
		for _, h := range r.Header.Values("Accept") {
			for _, part := range strings.Split(h, ",") {
				if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == mimeCSV {
					csv = true
				}
			}
		}
		if csv {
			r.Header.Set("Accept", mimeCSV)
		}
		next(w, r, pathParams)
	}
}
