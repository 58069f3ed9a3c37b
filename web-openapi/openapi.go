// Package webopenapi serves Trainyard's generated OpenAPI document and a
// documentation page built on a vendored copy of swagger-ui, so the docs work
// without reaching any CDN.
package webopenapi

import (
	"embed"
	"net/http"
)

//go:embed trainyard.swagger.json docs.html swagger-ui/swagger-ui-bundle.js swagger-ui/swagger-ui.css
var files embed.FS

// Document returns the OpenAPI (Swagger 2.0) document generated from proto/.
func Document() []byte {
	b, err := files.ReadFile("trainyard.swagger.json")
	if err != nil {
		panic(err) // embedded at build time
	}
	return b
}

// Register adds GET /openapi.json and the /docs page to mux.
func Register(mux *http.ServeMux) {
	doc := Document()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	serve := func(name, contentType string) http.HandlerFunc {
		body, err := files.ReadFile(name)
		if err != nil {
			panic(err)
		}
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("GET /docs", serve("docs.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /docs/swagger-ui-bundle.js", serve("swagger-ui/swagger-ui-bundle.js", "text/javascript"))
	mux.HandleFunc("GET /docs/swagger-ui.css", serve("swagger-ui/swagger-ui.css", "text/css"))
}
