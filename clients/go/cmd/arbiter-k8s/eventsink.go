package main

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
)

// eventSink queues each new Event and returns at once; eventWriters goroutines write them. The
// broadcaster of k8s.io/client-go/tools/record writes Events one by one and drops those that
// overflow its queue of 1000, and a cycle records the Scheduled events of all its bindings at
// once: a cycle of thousands lost most of them. (kube-scheduler's events library writes each in
// a goroutine of its own.) Patches of a repeated event stay synchronous. Events are best effort:
// beyond eventQueue waiting, they are dropped, and logged.
type eventSink struct {
	record.EventSink
	queue chan *corev1.Event
	log   *slog.Logger
}

const (
	eventQueue   = 1 << 14
	eventWriters = 16
)

// newEventSink starts the writers, which stop with ctx.
func newEventSink(ctx context.Context, sink record.EventSink, log *slog.Logger) *eventSink {
	s := &eventSink{EventSink: sink, queue: make(chan *corev1.Event, eventQueue), log: log}
	for i := 0; i < eventWriters; i++ {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-s.queue:
					if _, err := s.EventSink.Create(e); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
						log.Warn("writing an event failed", "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
							"reason", e.Reason, "err", err)
					}
				}
			}
		}()
	}
	return s
}

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	select {
	case s.queue <- e:
	default:
		s.log.Warn("event dropped: too many waiting", "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "reason", e.Reason)
	}
	return e, nil
}
