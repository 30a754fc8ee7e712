package controlplane

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// FinishWorkload marks the Workload namespace/name Finished, as Kueue's job integration does
// when the job it stands for ends: it sets the condition Finished to True with reason Succeeded
// through the status subresource (retrying on a conflict with Kueue's own updates). Kueue then
// releases the Workload's quota. It fails if the Workload does not exist.
func FinishWorkload(ctx context.Context, client kueueclient.Interface, namespace, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wl, err := client.KueueV1beta2().Workloads(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{
			Type:               kueue.WorkloadFinished,
			Status:             metav1.ConditionTrue,
			Reason:             kueue.WorkloadFinishedReasonSucceeded,
			Message:            "Job finished successfully",
			ObservedGeneration: wl.Generation,
		})
		_, err = client.KueueV1beta2().Workloads(namespace).UpdateStatus(ctx, wl, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("finish workload %s/%s: %w", namespace, name, err)
	}
	return nil
}

// WaitForWorkloadCondition waits until the Workload namespace/name has the condition
// conditionType (kueue.WorkloadQuotaReserved, kueue.WorkloadAdmitted, ...) True, and returns it
// as then read. It gives up after timeout or when ctx ends, with an error that shows the
// Workload's conditions as last seen.
func WaitForWorkloadCondition(ctx context.Context, client kueueclient.Interface, namespace, name, conditionType string, timeout time.Duration) (*kueue.Workload, error) {
	var last *kueue.Workload
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		wl, err := client.KueueV1beta2().Workloads(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		last = wl
		return meta.IsStatusConditionTrue(wl.Status.Conditions, conditionType), nil
	})
	if err == nil {
		return last, nil
	}
	seen := "never read"
	if last != nil {
		seen = fmt.Sprintf("conditions %s", describeConditions(last.Status.Conditions))
	} else if lastErr != nil {
		seen = lastErr.Error()
	}
	return last, fmt.Errorf("workload %s/%s never %s (%s): %w", namespace, name, conditionType, seen, err)
}

func describeConditions(conditions []metav1.Condition) string {
	if len(conditions) == 0 {
		return "none"
	}
	out := ""
	for i, c := range conditions {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return out
}
