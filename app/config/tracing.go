package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/ralph-temporal/ralph/internal/tracing"
)

// The standard OpenTelemetry variables the binaries read (docs/observability.md#traces);
// there is no Ralph-specific endpoint setting. The exporter itself also
// reads the other standard OTEL_EXPORTER_OTLP_* variables (headers,
// certificates, timeout, compression) from the process environment.
const (
	EnvOTLPEndpoint         = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint   = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvOTLPProtocol         = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol   = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvOTelServiceName      = "OTEL_SERVICE_NAME"
	EnvOTelResourceAttrs    = "OTEL_RESOURCE_ATTRIBUTES"
	EnvCaptureContent       = tracing.EnvCaptureContent
	ProtocolHTTPProtobuf    = "http/protobuf"
	ProtocolGRPC            = "grpc"
	DefaultWorkerService    = "ralph-worker"
	DefaultStarterService   = "ralph-starter"
	defaultOTLPHTTPEndpoint = "/v1/traces"
)

// Tracing is where a binary's spans go. Enabled is false unless one of the
// endpoint variables is set.
type Tracing struct {
	Enabled bool
	// Endpoint is the full URL the exporter sends to: the traces endpoint as
	// given, or the base endpoint plus /v1/traces for OTLP/HTTP.
	Endpoint string
	// Protocol is http/protobuf (default) or grpc.
	Protocol string
	// ServiceName is OTEL_SERVICE_NAME or the binary's default.
	ServiceName string
	// ResourceAttributes is OTEL_RESOURCE_ATTRIBUTES as given (checked);
	// Attributes decodes it. A string keeps the configuration comparable.
	ResourceAttributes string
	// CaptureContent records prompts, completions, tool arguments and
	// results on the spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
	CaptureContent bool
}

// LoadTracing reads the standard OTEL_* variables; defaultService names the
// binary when OTEL_SERVICE_NAME is unset.
func LoadTracing(env Env, defaultService string) (Tracing, error) {
	t := Tracing{Protocol: ProtocolHTTPProtobuf, ServiceName: defaultService}
	if v, ok := lookup(env, EnvOTLPTracesProtocol); ok {
		t.Protocol = strings.TrimSpace(v)
	} else if v, ok := lookup(env, EnvOTLPProtocol); ok {
		t.Protocol = strings.TrimSpace(v)
	}
	if t.Protocol != ProtocolHTTPProtobuf && t.Protocol != ProtocolGRPC {
		return Tracing{}, fmt.Errorf("%s=%q: must be %s or %s (http/json is not supported)", EnvOTLPProtocol, t.Protocol, ProtocolHTTPProtobuf, ProtocolGRPC)
	}
	if v, ok := lookup(env, EnvOTLPTracesEndpoint); ok {
		t.Enabled, t.Endpoint = true, strings.TrimSpace(v)
		if err := checkEndpoint(EnvOTLPTracesEndpoint, t.Endpoint); err != nil {
			return Tracing{}, err
		}
	} else if v, ok := lookup(env, EnvOTLPEndpoint); ok {
		t.Enabled, t.Endpoint = true, strings.TrimSpace(v)
		if err := checkEndpoint(EnvOTLPEndpoint, t.Endpoint); err != nil {
			return Tracing{}, err
		}
		if t.Protocol == ProtocolHTTPProtobuf {
			// The base endpoint gets the signal's path (OTLP exporter spec).
			t.Endpoint = strings.TrimSuffix(t.Endpoint, "/") + defaultOTLPHTTPEndpoint
		}
	}
	if v, ok := lookup(env, EnvOTelServiceName); ok {
		t.ServiceName = strings.TrimSpace(v)
	}
	if v, ok := lookup(env, EnvOTelResourceAttrs); ok {
		if _, err := parseResourceAttributes(v); err != nil {
			return Tracing{}, err
		}
		t.ResourceAttributes = v
	}
	if v, ok := lookup(env, EnvCaptureContent); ok {
		on, err := ParseBool(EnvCaptureContent, v)
		if err != nil {
			return Tracing{}, err
		}
		t.CaptureContent = on
	}
	return t, nil
}

// Attributes are the decoded OTEL_RESOURCE_ATTRIBUTES.
func (t Tracing) Attributes() map[string]string {
	attrs, _ := parseResourceAttributes(t.ResourceAttributes) // checked by LoadTracing
	return attrs
}

// CheckEncryption refuses message content in spans while payloads are
// encrypted: the spans would carry in clear what the history hides.
func (t Tracing) CheckEncryption(keyFile string) error {
	if t.CaptureContent && keyFile != "" {
		return fmt.Errorf("%s=true and %s are both set: message content in spans would bypass payload encryption; unset one of them",
			EnvCaptureContent, EnvEncryptionKeyFile)
	}
	return nil
}

func checkEndpoint(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q: must be an http:// or https:// URL", name, v)
	}
	return nil
}

// parseResourceAttributes decodes key1=value1,key2=value2 (values
// percent-encoded, as the OpenTelemetry specification says).
func parseResourceAttributes(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value", EnvOTelResourceAttrs, part)
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s: value of %q: %v", EnvOTelResourceAttrs, k, err)
		}
		out[k] = decoded
	}
	return out, nil
}
