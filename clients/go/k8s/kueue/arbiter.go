package kueue

import (
	"context"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Arbiter is the part of arbiter's API the adapter calls; *client.Client implements it.
type Arbiter interface {
	Schedule(ctx context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error)
	ComputeFairShares(ctx context.Context, req *arbiterv1.FairShareRequest) (*arbiterv1.FairShareResponse, error)
}
