package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// API is one API group version of a cluster, through client-go's REST
// client: what the generated clientset does for a group, without the
// clientset. A run needs core/v1 objects alone (namespaces, pods, claims,
// their logs and exec), and the clientset (k8s.io/client-go/kubernetes)
// brings every group's types, typed clients and apply configurations:
// the command had 1,016 packages with it and has 790 without, and its
// race-enabled build took 147 s instead of 233 cold (108 MB against 66).
type API struct {
	rest   *rest.RESTClient
	params runtime.ParameterCodec
}

// NewAPI is the API of group version gv on cfg's cluster; addTypes
// registers its objects (corev1.AddToScheme, say).
func NewAPI(cfg *rest.Config, gv schema.GroupVersion, addTypes func(*runtime.Scheme) error) (*API, error) {
	s := runtime.NewScheme()
	// Options and Status, as the clientset's scheme registers them.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := addTypes(s); err != nil {
		return nil, fmt.Errorf("register %s: %w", gv, err)
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", gv, err)
	}
	return &API{rest: rc, params: runtime.NewParameterCodec(s)}, nil
}

// coreAPI is the core group's (v1) API on cfg's cluster.
func coreAPI(cfg *rest.Config) (*API, error) {
	return NewAPI(cfg, corev1.SchemeGroupVersion, corev1.AddToScheme)
}

// Create creates obj, a resource ("pods", "namespaces") in namespace ns
// ("" for one of the whole cluster), and decodes what the API made of it
// into into.
func (a *API) Create(ctx context.Context, ns, resource string, obj, into runtime.Object) error {
	return a.rest.Post().NamespaceIfScoped(ns, ns != "").Resource(resource).Body(obj).Do(ctx).Into(into)
}

// Get decodes the named object into into.
func (a *API) Get(ctx context.Context, ns, resource, name string, into runtime.Object) error {
	return a.rest.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).Name(name).Do(ctx).Into(into)
}

// List decodes the objects opts select into into (a list: corev1.PodList).
func (a *API) List(ctx context.Context, ns, resource string, opts metav1.ListOptions, into runtime.Object) error {
	return a.rest.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).VersionedParams(&opts, a.params).Do(ctx).Into(into)
}

// Delete deletes the named object.
func (a *API) Delete(ctx context.Context, ns, resource, name string, opts metav1.DeleteOptions) error {
	return a.rest.Delete().NamespaceIfScoped(ns, ns != "").Resource(resource).Name(name).Body(&opts).Do(ctx).Error()
}

// logs streams a pod's log as opts say.
func (a *API) logs(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return a.rest.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").VersionedParams(opts, a.params).Stream(ctx)
}

// execURL is the address of a command's exec in a pod.
func (a *API) execURL(ns, pod string, opts *corev1.PodExecOptions) *rest.Request {
	return a.rest.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").VersionedParams(opts, a.params)
}
