package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slowSink is a record.EventSink whose Create takes a while, like an API server under load.
type slowSink struct {
	mu      sync.Mutex
	created []string
	delay   time.Duration
}

func (s *slowSink) Create(e *corev1.Event) (*corev1.Event, error) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e.Name)
	return e, nil
}

func (s *slowSink) Update(e *corev1.Event) (*corev1.Event, error)          { return e, nil }
func (s *slowSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

func (s *slowSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.created)
}

func TestEventSinkReturnsAtOnceAndWritesEveryEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := &slowSink{delay: 10 * time.Millisecond}
	sink := newEventSink(ctx, inner, slog.New(slog.NewTextHandler(io.Discard, nil)))
	const n = 200
	start := time.Now()
	for i := 0; i < n; i++ {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)}}
		if got, err := sink.Create(e); err != nil || got != e {
			t.Fatalf("Create = %v, %v", got, err)
		}
	}
	// One by one the writes would take n x 10 ms = 2 s; queued, Create returns at once.
	if d := time.Since(start); d > time.Second {
		t.Errorf("queuing %d events took %s", n, d)
	}
	deadline := time.Now().Add(10 * time.Second)
	for inner.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := inner.count(); got != n {
		t.Errorf("%d events written, want %d", got, n)
	}
}

func TestBindWorkersFollowTheClientRate(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, 67}, // 200 QPS / 3
		{[]string{"--kube-api-qps=1000"}, 334},
		{[]string{"--kube-api-qps=20"}, 16},
		{[]string{"--kube-api-qps=1000", "--bind-workers=8"}, 8},
	}
	for _, tc := range tests {
		o, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.BindWorkers != tc.want {
			t.Errorf("parseFlags(%q): bind workers = %d, want %d", tc.args, o.cfg.BindWorkers, tc.want)
		}
	}
}
