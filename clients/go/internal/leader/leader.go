// Package leader runs an adapter's work only while its replica holds a Lease, and hands the Lease
// over only after the work has stopped (and saved its state).
package leader

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Run runs work while this replica holds the lock, and returns when ctx ends or the lease
// is lost. On ctx's end (SIGTERM) the work is stopped first and waited for (it saves the usage
// ledger on its way out), and only then is the Lease released, so that the next leader starts
// from the saved ledger and never binds while this one still does. It reports whether the lease
// was lost (rather than given up).
func Run(ctx context.Context, cfg leaderelection.LeaderElectionConfig, log *slog.Logger, work func(context.Context)) (lost bool) {
	// The election ends on its own context, cancelled after the work has stopped.
	electCtx, release := context.WithCancel(context.WithoutCancel(ctx))
	defer release()

	var mu sync.Mutex
	var working chan struct{} // closed when the work returns; nil before leading
	cfg.ReleaseOnCancel = true
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(leadCtx context.Context) {
			done := make(chan struct{})
			mu.Lock()
			working = done
			mu.Unlock()
			defer close(done)
			workCtx, stop := context.WithCancel(leadCtx)
			defer stop()
			defer context.AfterFunc(ctx, stop)()
			log.Info("leading")
			work(workCtx)
		},
		OnStoppedLeading: func() { log.Info("no longer leading") },
	}
	waitWork := func() {
		mu.Lock()
		done := working
		mu.Unlock()
		if done != nil {
			<-done
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			waitWork()
			release()
		case <-electCtx.Done():
		}
	}()
	leaderelection.RunOrDie(electCtx, cfg)
	// The election may end with the work still running (a lost lease, or a start that raced
	// the stop): wait for it, so that the process never exits before the ledger is saved.
	release()
	waitWork()
	return ctx.Err() == nil
}

// Config is the leader election of the Lease namespace/name through kube, with this replica's
// identity (host name and a random suffix) and the election's timing; the callbacks are Run's.
func Config(kube kubernetes.Interface, namespace, name string, lease, renew, retry time.Duration) leaderelection.LeaderElectionConfig {
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	return leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
	}
}
