package config

import (
	"io"
	"strings"
	"testing"
)

func TestLoadTracing(t *testing.T) {
	tests := []struct {
		name string
		env  MapEnv
		want Tracing
	}{
		{"off", MapEnv{}, Tracing{Protocol: ProtocolHTTPProtobuf, ServiceName: "svc"}},
		{"base endpoint gets the traces path", MapEnv{EnvOTLPEndpoint: "http://127.0.0.1:4318/"},
			Tracing{Enabled: true, Endpoint: "http://127.0.0.1:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, ServiceName: "svc"}},
		{"traces endpoint as given, and it wins", MapEnv{EnvOTLPEndpoint: "http://a:4318", EnvOTLPTracesEndpoint: "http://b:4318/custom"},
			Tracing{Enabled: true, Endpoint: "http://b:4318/custom", Protocol: ProtocolHTTPProtobuf, ServiceName: "svc"}},
		{"grpc keeps the base endpoint", MapEnv{EnvOTLPEndpoint: "http://c:4317", EnvOTLPProtocol: "grpc"},
			Tracing{Enabled: true, Endpoint: "http://c:4317", Protocol: ProtocolGRPC, ServiceName: "svc"}},
		{"traces protocol wins", MapEnv{EnvOTLPEndpoint: "http://c:4317", EnvOTLPProtocol: "grpc", EnvOTLPTracesProtocol: "http/protobuf"},
			Tracing{Enabled: true, Endpoint: "http://c:4317/v1/traces", Protocol: ProtocolHTTPProtobuf, ServiceName: "svc"}},
		{"service, resource, content", MapEnv{EnvOTelServiceName: "w1", EnvOTelResourceAttrs: "deployment.environment=prod,team=a%20b", EnvCaptureContent: "true"},
			Tracing{Protocol: ProtocolHTTPProtobuf, ServiceName: "w1", ResourceAttributes: "deployment.environment=prod,team=a%20b", CaptureContent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadTracing(tt.env, "svc")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	attrs := Tracing{ResourceAttributes: "deployment.environment=prod,team=a%20b"}.Attributes()
	if len(attrs) != 2 || attrs["team"] != "a b" || attrs["deployment.environment"] != "prod" {
		t.Errorf("attributes = %v", attrs)
	}
}

func TestLoadTracingRefusesBadValues(t *testing.T) {
	for _, tt := range []struct {
		env  MapEnv
		want string
	}{
		{MapEnv{EnvOTLPProtocol: "http/json"}, EnvOTLPProtocol},
		{MapEnv{EnvOTLPEndpoint: "collector:4318"}, EnvOTLPEndpoint},
		{MapEnv{EnvOTLPTracesEndpoint: "ftp://x"}, EnvOTLPTracesEndpoint},
		{MapEnv{EnvOTelResourceAttrs: "novalue"}, EnvOTelResourceAttrs},
		{MapEnv{EnvCaptureContent: "maybe"}, EnvCaptureContent},
	} {
		if _, err := LoadTracing(tt.env, "svc"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want one naming %s", tt.env, err, tt.want)
		}
	}
}

// Content capture with payload encryption is refused at start, by the worker
// and the starter, with both settings named.
func TestCaptureContentRefusedWithEncryption(t *testing.T) {
	env := MapEnv{EnvCaptureContent: "true", EnvEncryptionKeyFile: "/etc/ralph/keys"}
	_, werr := LoadWorker(nil, env, io.Discard)
	_, serr := LoadStarter(env)
	for _, err := range []error{werr, serr} {
		if err == nil || !strings.Contains(err.Error(), EnvCaptureContent) || !strings.Contains(err.Error(), EnvEncryptionKeyFile) {
			t.Errorf("err = %v, want a refusal naming %s and %s", err, EnvCaptureContent, EnvEncryptionKeyFile)
		}
	}
	env[EnvCaptureContent] = "false"
	if _, err := LoadWorker(nil, env, io.Discard); err != nil {
		t.Errorf("encryption without content capture: %v", err)
	}
	w, err := LoadWorker(nil, MapEnv{EnvOTLPEndpoint: "http://127.0.0.1:4318"}, io.Discard)
	if err != nil || !w.Tracing.Enabled || w.Tracing.ServiceName != DefaultWorkerService {
		t.Errorf("worker tracing = %+v, %v", w.Tracing, err)
	}
	s, err := LoadStarter(MapEnv{EnvOTLPEndpoint: "http://127.0.0.1:4318"})
	if err != nil || !s.Tracing.Enabled || s.Tracing.ServiceName != DefaultStarterService {
		t.Errorf("starter tracing = %+v, %v", s.Tracing, err)
	}
}
