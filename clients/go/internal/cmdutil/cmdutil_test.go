package cmdutil

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	"arbiter.dev/clients/go/client"
)

func TestNewLoggerWritesTheChosenFormatAtTheChosenLevel(t *testing.T) {
	for name, tc := range map[string]struct {
		level      string
		json       bool
		wantOut    string
		wantNoInfo bool
	}{
		"json at info":    {level: "info", json: JSON, wantOut: `"msg":"hello"`},
		"text at debug":   {level: "debug", json: Text, wantOut: "msg=hello"},
		"warn hides info": {level: "warn", json: Text, wantNoInfo: true},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := LogFlags{Level: tc.level}.NewLogger(&buf, tc.json)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello")
			if tc.wantNoInfo {
				if buf.Len() != 0 {
					t.Errorf("logged %q at level %s", buf.String(), tc.level)
				}
				return
			}
			if !strings.Contains(buf.String(), tc.wantOut) {
				t.Errorf("logged %q, want it to hold %q", buf.String(), tc.wantOut)
			}
		})
	}
}

func TestNewLoggerNamesTheFlagOfABadLevel(t *testing.T) {
	_, err := LogFlags{Level: "loud"}.NewLogger(&bytes.Buffer{}, JSON)
	if err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Fatalf("err = %v, want one naming --log-level", err)
	}
}

func TestFlagGroupsRegisterTheSharedNamesAndDefaults(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	var (
		kube   KubeFlags
		server ServerFlags
		log    LogFlags
		lead   LeaderFlags
	)
	kube.Register(fs, "/kubeconfig")
	server.Register(fs, "target")
	server.RegisterTLS(fs)
	log.Register(fs)
	lead.Register(fs, "my-lease", "elect")
	if err := fs.Parse([]string{"--server", "dns:///arbiter:50051", "--tls-ca", "ca.pem", "--lease-duration", "30s"}); err != nil {
		t.Fatal(err)
	}
	if kube.Kubeconfig != "/kubeconfig" || server.Target != "dns:///arbiter:50051" || server.TLS.CA != "ca.pem" ||
		log.Level != "info" || !lead.Elect || lead.LeaseName != "my-lease" || lead.LeaseDuration != 30*time.Second ||
		lead.RenewDeadline != 10*time.Second || lead.RetryPeriod != 2*time.Second {
		t.Errorf("parsed kube %+v server %+v log %+v leader %+v", kube, server, log, lead)
	}
}

func TestDialRefusesAMissingCABundle(t *testing.T) {
	s := ServerFlags{Target: "localhost:1", TLS: client.TLSFiles{CA: "/no/such/ca.pem"}}
	if c, err := s.Dial(time.Second); err == nil {
		c.Close()
		t.Fatal("Dial with a missing --tls-ca succeeded")
	}
}

func TestEnvOr(t *testing.T) {
	t.Setenv("CMDUTIL_TEST_SET", "value")
	t.Setenv("CMDUTIL_TEST_EMPTY", "")
	if got := EnvOr("CMDUTIL_TEST_SET", "def"); got != "value" {
		t.Errorf("set: %q", got)
	}
	if got := EnvOr("CMDUTIL_TEST_EMPTY", "def"); got != "def" {
		t.Errorf("empty: %q", got)
	}
}
