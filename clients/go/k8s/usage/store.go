package usage

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DataKey is the ConfigMap key holding the ledger as JSON.
const DataKey = "usage.json"

// ConfigMapStore persists a Ledger in one ConfigMap, so that a restart or a new leader continues
// where the last one stopped.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
}

// Load reads the ledger; a missing ConfigMap or key is a new, empty ledger.
func (s *ConfigMapStore) Load(ctx context.Context) (*Ledger, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Ledger{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load usage from configmap %s/%s: %w", s.Namespace, s.Name, err)
	}
	l := &Ledger{}
	if data, ok := cm.Data[DataKey]; ok && data != "" {
		if err := json.Unmarshal([]byte(data), l); err != nil {
			return nil, fmt.Errorf("configmap %s/%s key %s: %w", s.Namespace, s.Name, DataKey, err)
		}
	}
	return l, nil
}

// Save writes the ledger, creating the ConfigMap when it does not exist.
func (s *ConfigMapStore) Save(ctx context.Context, l *Ledger) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode usage: %w", err)
	}
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name},
			Data:       map[string]string{DataKey: string(data)},
		}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else if err == nil {
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[DataKey] = string(data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("save usage to configmap %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
