package server

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// routes are the REST routes of the services, read from their
// google.api.http annotations: the same source the gateway is generated
// from, so that the Allow header of a 405 lists exactly the methods the
// gateway serves on a path.
type routes []route

type route struct {
	method string
	path   *regexp.Regexp
	// verb: the template ends in a custom method (…/jobs/*:cancel). A
	// path a verb route matches is that route's only: job ids cannot hold
	// a colon, so GET …/jobs/j1:cancel is not GetJob of "j1:cancel".
	verb bool
}

// apiRoutes reads the HTTP rules of every trainyard.v1 service linked
// into the binary, so that a service added later has its 405s without a
// list to remember.
func apiRoutes() routes {
	var files []protoreflect.FileDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("trainyard.v1", func(f protoreflect.FileDescriptor) bool {
		files = append(files, f)
		return true
	})
	slices.SortFunc(files, func(a, b protoreflect.FileDescriptor) int { return strings.Compare(a.Path(), b.Path()) })
	return routesOf(files...)
}

// routesOf reads the HTTP rules of every method of the services in files.
func routesOf(files ...protoreflect.FileDescriptor) routes {
	var rs routes
	for _, f := range files {
		for i := 0; i < f.Services().Len(); i++ {
			ms := f.Services().Get(i).Methods()
			for j := 0; j < ms.Len(); j++ {
				rule, _ := proto.GetExtension(ms.Get(j).Options(), annotations.E_Http).(*annotations.HttpRule)
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					if method, tmpl := verbAndTemplate(r); tmpl != "" {
						rs = append(rs, newRoute(method, tmpl))
					}
				}
			}
		}
	}
	return rs
}

func newRoute(method, tmpl string) route {
	last := tmpl[strings.LastIndexByte(tmpl, '/')+1:]
	return route{method: method, path: templateRegexp(tmpl), verb: strings.Contains(templateVariable.ReplaceAllString(last, "*"), ":")}
}

func verbAndTemplate(r *annotations.HttpRule) (string, string) {
	switch {
	case r.GetGet() != "":
		return http.MethodGet, r.GetGet()
	case r.GetPost() != "":
		return http.MethodPost, r.GetPost()
	case r.GetPut() != "":
		return http.MethodPut, r.GetPut()
	case r.GetPatch() != "":
		return http.MethodPatch, r.GetPatch()
	case r.GetDelete() != "":
		return http.MethodDelete, r.GetDelete()
	}
	return "", ""
}

var templateVariable = regexp.MustCompile(`\{[^}=]+(=([^}]*))?\}`)

// templateRegexp turns a path template (/v1/{name=tenants/*/jobs/*}:cancel)
// into a regexp over the escaped request path: a variable is its pattern
// ({x} is *), * one segment, ** any number.
func templateRegexp(tmpl string) *regexp.Regexp {
	expanded := templateVariable.ReplaceAllStringFunc(tmpl, func(v string) string {
		if _, pat, ok := strings.Cut(strings.Trim(v, "{}"), "="); ok {
			return pat
		}
		return "*"
	})
	var b strings.Builder
	for i, seg := range strings.Split(expanded, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		for j, part := range strings.SplitAfter(seg, "**") {
			if j > 0 {
				b.WriteString(".*")
			}
			for k, lit := range strings.Split(strings.TrimSuffix(part, "**"), "*") {
				if k > 0 {
					b.WriteString(`[^/]+`)
				}
				b.WriteString(regexp.QuoteMeta(lit))
			}
		}
	}
	return regexp.MustCompile(`^` + b.String() + `$`)
}

// allowed lists the methods served on path, in a stable order; empty for a
// path no route matches.
func (rs routes) allowed(path string) []string {
	var out []string
	verb := slices.ContainsFunc(rs, func(r route) bool { return r.verb && r.path.MatchString(path) })
	for _, r := range rs {
		if r.verb == verb && r.path.MatchString(path) && !slices.Contains(out, r.method) {
			out = append(out, r.method)
		}
	}
	slices.Sort(out)
	return out
}

// methodCheck answers 405 with Allow to a request whose path a route
// serves but not with its method, before anything else looks at it
// (issue 41, finding 8: GET …/jobs/j1:cancel was GetJob of "j1:cancel",
// 404). Other requests pass to next, unknown paths included.
func (rs routes) methodCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := rs.allowed(r.URL.EscapedPath())
		if len(allow) > 0 && !slices.Contains(allow, r.Method) {
			methodNotAllowed(w, r, allow...)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// methodNotAllowed answers 405 with Allow and the gateway's JSON error.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow ...string) {
	list := strings.Join(allow, ", ")
	w.Header().Set("Allow", list)
	writeStatus(w, http.StatusMethodNotAllowed, status.Newf(codes.Unimplemented,
		"method %s is not allowed on %s; allowed: %s", r.Method, r.URL.EscapedPath(), list))
}

// onlyGET makes mux answer 405 (Allow: GET, HEAD) to other methods on
// paths it serves with GET only (/healthz, /metrics, /docs, …), which a
// catch-all (the console at /) would otherwise take.
func onlyGET(mux *http.ServeMux, paths ...string) {
	for _, p := range paths {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			methodNotAllowed(w, r, http.MethodGet, http.MethodHead)
		})
	}
}
