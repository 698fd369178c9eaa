package testkit

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is a minimal OTLP/HTTP trace collector on loopback: it
// decodes every ExportTraceServiceRequest (protobuf) POSTed to /v1/traces
// and keeps the spans, each with the service that exported it.
type OTLPReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	// spans in arrival order
	spans []Span
	raw   [][]byte
}

// Span is one received span, flattened for assertions.
type Span struct {
	Service  string
	TraceID  string
	SpanID   string
	ParentID string // "" for a root span
	Name     string
	Kind     tracepb.Span_SpanKind
	Error    bool
	Status   string
	Attrs    map[string]*commonpb.AnyValue
	Events   []string
}

// Str is a string attribute ("" when absent).
func (s Span) Str(key string) string { return s.Attrs[key].GetStringValue() }

// Int is an int attribute (0 when absent).
func (s Span) Int(key string) int64 { return s.Attrs[key].GetIntValue() }

// NewOTLPReceiver starts a receiver; Close stops it.
func NewOTLPReceiver() *OTLPReceiver {
	r := &OTLPReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	return r
}

// Endpoint is the base URL for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *OTLPReceiver) Endpoint() string { return r.srv.URL }

// Close stops the receiver.
func (r *OTLPReceiver) Close() { r.srv.Close() }

// Spans is every span received so far.
func (r *OTLPReceiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Raw is every request body received so far, decompressed.
func (r *OTLPReceiver) Raw() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.raw...)
}

func (r *OTLPReceiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &in); err != nil {
		http.Error(w, fmt.Sprintf("not an ExportTraceServiceRequest: %v", err), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range in.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Name: s.GetName(), Kind: s.GetKind(), Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Status: s.GetStatus().GetMessage(), Attrs: map[string]*commonpb.AnyValue{}}
				if len(s.GetParentSpanId()) > 0 {
					sp.ParentID = hex.EncodeToString(s.GetParentSpanId())
				}
				for _, kv := range s.GetAttributes() {
					sp.Attrs[kv.GetKey()] = kv.GetValue()
				}
				for _, ev := range s.GetEvents() {
					sp.Events = append(sp.Events, ev.GetName())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.raw = append(r.raw, data)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}
