package server

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trainyard/trainyard/internal/document"
)

// queryParser is the gateway's query parameter parser with plain errors
// naming the parameter (issue 41, finding 6): the default one answers
// `parsing field "page_size": strconv.ParseInt: parsing "abc": invalid
// syntax`, or for a time Go's layout string.
type queryParser struct{ runtime.DefaultQueryParser }

func (p queryParser) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	err := p.DefaultQueryParser.Parse(msg, values, filter)
	if err == nil {
		return nil
	}
	// Find the parameter at fault: the first that fails alone.
	for key, vs := range values {
		probe := msg.ProtoReflect().New().Interface()
		if p.DefaultQueryParser.Parse(probe, url.Values{key: vs}, filter) != nil {
			return &document.Error{Field: key, Reason: queryReason(msg.ProtoReflect().Descriptor(), key, vs)}
		}
	}
	return &document.Error{Reason: "the query parameters do not match the request"}
}

// queryReason says what the parameter key (a dotted path of JSON or proto
// names) must be.
func queryReason(md protoreflect.MessageDescriptor, key string, vs []string) string {
	var fd protoreflect.FieldDescriptor
	for _, part := range strings.Split(key, ".") {
		if md == nil {
			fd = nil
			break
		}
		if fd = md.Fields().ByJSONName(part); fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(part))
		}
		if fd == nil {
			break
		}
		md = fd.Message()
	}
	if fd == nil {
		return "unknown query parameter"
	}
	if len(vs) > 1 && !fd.IsList() {
		return "given more than once"
	}
	kind := fd.Kind().String()
	if fd.Message() != nil {
		kind = string(fd.Message().FullName())
	}
	return fmt.Sprintf("invalid value %q: expected %s", vs[0], document.Expected(kind))
}
