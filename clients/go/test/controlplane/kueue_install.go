package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The names Kueue's manifests give its webhook Service and certificate Secret; the certificate
// rotator derives the webhook configurations' names and the certificate's DNS name from them.
const (
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
)

// kueueConvertedCRDs are the CRDs that Kueue's manifests convert through its webhook and into
// which its certificate rotator injects the CA; it reports ready only once each has taken it.
var kueueConvertedCRDs = map[string]bool{
	"localqueues.kueue.x-k8s.io":        true,
	"clusterqueues.kueue.x-k8s.io":      true,
	"workloads.kueue.x-k8s.io":          true,
	"cohorts.kueue.x-k8s.io":            true,
	"multikueueclusters.kueue.x-k8s.io": true,
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installKueue does what Kueue's installation does before its manager starts (see StartKueue):
// the CRDs of src/crds, established; KueueNamespace; the webhook Secret and the same certificate
// in dir/certs.
func (cp *ControlPlane) installKueue(ctx context.Context, src, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
		return err
	}
	crds, err := cp.installKueueCRDs(ctx, filepath.Join(src, "crds"), filepath.Join(dir, "crds"))
	if err != nil {
		return err
	}
	secret, err := writeKueueCertificates(filepath.Join(dir, "certs"))
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cp.RESTConfig(Admin))
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookSecret, Namespace: KueueNamespace}, Data: secret}
	if _, err := kube.CoreV1().Secrets(KueueNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("webhook secret: %w", err)
	}
	return waitEstablished(ctx, cp, crds)
}

// installKueueCRDs applies the CRDs of src, serving their storage version only and with the
// conversion stanza of Kueue's manifests added where they have it, from copies written into dst.
// It returns their names.
func (cp *ControlPlane) installKueueCRDs(ctx context.Context, src, dst string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", src)
	}
	var paths []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := serveOnlyStorageVersion(crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if kueueConvertedCRDs[crd.GetName()] {
			conversion := map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig": map[string]any{
						"service": map[string]any{"namespace": KueueNamespace, "name": kueueWebhookService, "path": "/convert"},
					},
					"conversionReviewVersions": []any{"v1"},
				},
			}
			if err := unstructured.SetNestedMap(crd.Object, conversion, "spec", "conversion"); err != nil {
				return nil, err
			}
		}
		out, err := yaml.Marshal(crd.Object)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dst, filepath.Base(f))
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	objs, err := cp.Apply(ctx, paths...)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	return names, nil
}

// serveOnlyStorageVersion stops the CRD serving its versions other than the storage version
// (v1beta1, where v1beta2 is stored). The API server keeps a watch cache for each served
// version and converts every object into it: through the conversion webhook, which nothing
// here serves, it would fail hundreds of times a second.
func serveOnlyStorageVersion(crd *unstructured.Unstructured) error {
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return err
	}
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.versions holds a %T", v)
		}
		if version["storage"] != true {
			version["served"] = false
		}
	}
	return unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
}

// waitEstablished waits until each named CRD has the condition Established.
func waitEstablished(ctx context.Context, cp *ControlPlane, names []string) error {
	dyn, err := dynamic.NewForConfig(cp.RESTConfig(Admin))
	if err != nil {
		return err
	}
	for _, name := range names {
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			crd, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conditions {
				if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	return nil
}

// writeKueueCertificates makes the CA and serving certificate that Kueue's certificate rotator
// would make (the same names, usages and key format, valid long enough that it keeps them),
// writes the serving pair into dir as the webhook server reads it, and returns the Secret's data.
func writeKueueCertificates(dir string) (map[string][]byte, error) {
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kueue-ca", Organization: []string{"kueue"}},
		DNSNames:              []string{"kueue-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	ca, caKey, caPEM, caKeyPEM, err := certificate(ca, nil, nil)
	if err != nil {
		return nil, err
	}
	dnsName := kueueWebhookService + "." + KueueNamespace + ".svc"
	serving := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{CommonName: dnsName},
		DNSNames:              []string{dnsName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	_, _, certPEM, keyPEM, err := certificate(serving, ca, caKey)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{"ca.crt": caPEM, "ca.key": caKeyPEM, "tls.crt": certPEM, "tls.key": keyPEM}
	for _, name := range []string{"tls.key", "tls.crt"} {
		if err := os.WriteFile(filepath.Join(dir, name), data[name], 0o600); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// certificate signs template for a new RSA key with parent's key (self-signed when parent is
// nil). It returns the certificate, its key, and the PEM of both (the key in PKCS #1, as the
// rotator reads it).
func certificate(template, parent *x509.Certificate, parentKey *rsa.PrivateKey) (*x509.Certificate, *rsa.PrivateKey, []byte, []byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return cert, key, certPEM, keyPEM, nil
}
