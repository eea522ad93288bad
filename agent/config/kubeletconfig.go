package config

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the part of the kubelet's config file
// (kubelet.config.k8s.io/v1beta1 KubeletConfiguration) that minikubelet
// reads or serves on /configz: each field has the kubelet's JSON name and
// Go type, so a file decodes as the kubelet decodes it
// (TestOwnConfigTypeIsTheKubelets).
//
// It is minikubelet's own type, not k8s.io/kubelet/config/v1beta1's:
// that package's type brings k8s.io/component-base's logging, tracing,
// feature-gate and metrics packages, whose package initialisation cost
// every agent some 0.6 MiB of RSS (a program that only imports them,
// against one that does not). The kubelet's other fields are known by
// name (kubeletFieldPaths) to tell a field minikubelet ignores from a
// misspelled one.
type KubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	StaticPodPath                    string                `json:"staticPodPath,omitempty"`
	PodLogsDir                       string                `json:"podLogsDir,omitempty"`
	SyncFrequency                    metav1.Duration       `json:"syncFrequency,omitempty"`
	FileCheckFrequency               metav1.Duration       `json:"fileCheckFrequency,omitempty"`
	HTTPCheckFrequency               metav1.Duration       `json:"httpCheckFrequency,omitempty"`
	StaticPodURL                     string                `json:"staticPodURL,omitempty"`
	StaticPodURLHeader               map[string][]string   `json:"staticPodURLHeader,omitempty"`
	Address                          string                `json:"address,omitempty"`
	Port                             int32                 `json:"port,omitempty"`
	ReadOnlyPort                     int32                 `json:"readOnlyPort,omitempty"`
	TLSCertFile                      string                `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile                string                `json:"tlsPrivateKeyFile,omitempty"`
	RotateCertificates               bool                  `json:"rotateCertificates,omitempty"`
	ServerTLSBootstrap               bool                  `json:"serverTLSBootstrap,omitempty"`
	Authentication                   kubeletAuthentication `json:"authentication"`
	Authorization                    kubeletAuthorization  `json:"authorization"`
	HealthzPort                      *int32                `json:"healthzPort,omitempty"`
	HealthzBindAddress               string                `json:"healthzBindAddress,omitempty"`
	ClusterDomain                    string                `json:"clusterDomain,omitempty"`
	ClusterDNS                       []string              `json:"clusterDNS,omitempty"`
	NodeStatusUpdateFrequency        metav1.Duration       `json:"nodeStatusUpdateFrequency,omitempty"`
	NodeStatusReportFrequency        metav1.Duration       `json:"nodeStatusReportFrequency,omitempty"`
	ImageMinimumGCAge                metav1.Duration       `json:"imageMinimumGCAge,omitempty"`
	ImageGCHighThresholdPercent      *int32                `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent       *int32                `json:"imageGCLowThresholdPercent,omitempty"`
	CgroupsPerQOS                    *bool                 `json:"cgroupsPerQOS,omitempty"`
	CgroupRoot                       string                `json:"cgroupRoot,omitempty"`
	CgroupDriver                     string                `json:"cgroupDriver,omitempty"`
	RuntimeRequestTimeout            metav1.Duration       `json:"runtimeRequestTimeout,omitempty"`
	MaxPods                          int32                 `json:"maxPods,omitempty"`
	PodPidsLimit                     *int64                `json:"podPidsLimit,omitempty"`
	ResolverConfig                   *string               `json:"resolvConf,omitempty"`
	KubeAPIQPS                       *int32                `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst                     int32                 `json:"kubeAPIBurst,omitempty"`
	EvictionHard                     map[string]string     `json:"evictionHard,omitempty"`
	EvictionSoft                     map[string]string     `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod          map[string]string     `json:"evictionSoftGracePeriod,omitempty"`
	EvictionPressureTransitionPeriod metav1.Duration       `json:"evictionPressureTransitionPeriod,omitempty"`
	EvictionMaxPodGracePeriod        int32                 `json:"evictionMaxPodGracePeriod,omitempty"`
	EvictionMinimumReclaim           map[string]string     `json:"evictionMinimumReclaim,omitempty"`
	MergeDefaultEvictionSettings     *bool                 `json:"mergeDefaultEvictionSettings,omitempty"`
	FeatureGates                     map[string]bool       `json:"featureGates,omitempty"`
	FailSwapOn                       *bool                 `json:"failSwapOn,omitempty"`
	MemorySwap                       memorySwap            `json:"memorySwap,omitempty"`
	ContainerLogMaxSize              string                `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxFiles             *int32                `json:"containerLogMaxFiles,omitempty"`
	ContainerLogMonitorInterval      *metav1.Duration      `json:"containerLogMonitorInterval,omitempty"`
	SystemReserved                   map[string]string     `json:"systemReserved,omitempty"`
	KubeReserved                     map[string]string     `json:"kubeReserved,omitempty"`
	SystemReservedCgroup             string                `json:"systemReservedCgroup,omitempty"`
	KubeReservedCgroup               string                `json:"kubeReservedCgroup,omitempty"`
	EnforceNodeAllocatable           []string              `json:"enforceNodeAllocatable,omitempty"`
	AllowedUnsafeSysctls             []string              `json:"allowedUnsafeSysctls,omitempty"`
	KernelMemcgNotification          bool                  `json:"kernelMemcgNotification,omitempty"`
	ShutdownGracePeriod              metav1.Duration       `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods  metav1.Duration       `json:"shutdownGracePeriodCriticalPods,omitempty"`
	RegisterWithTaints               []v1.Taint            `json:"registerWithTaints,omitempty"`
	LocalStorageCapacityIsolation    *bool                 `json:"localStorageCapacityIsolation,omitempty"`
	ContainerRuntimeEndpoint         string                `json:"containerRuntimeEndpoint"`
	EnableDebuggingHandlers          *bool                 `json:"enableDebuggingHandlers,omitempty"`
	CrashLoopBackOff                 crashLoopBackOff      `json:"crashLoopBackOff,omitempty"`
}

type kubeletAuthentication struct {
	X509 struct {
		ClientCAFile string `json:"clientCAFile,omitempty"`
	} `json:"x509"`
	Webhook struct {
		Enabled  *bool           `json:"enabled,omitempty"`
		CacheTTL metav1.Duration `json:"cacheTTL,omitempty"`
	} `json:"webhook"`
	Anonymous struct {
		Enabled *bool `json:"enabled,omitempty"`
	} `json:"anonymous"`
}

type kubeletAuthorization struct {
	Mode    string `json:"mode,omitempty"`
	Webhook struct {
		CacheAuthorizedTTL   metav1.Duration `json:"cacheAuthorizedTTL,omitempty"`
		CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL,omitempty"`
	} `json:"webhook"`
}

type memorySwap struct {
	SwapBehavior string `json:"swapBehavior,omitempty"`
}

type crashLoopBackOff struct {
	MaxContainerRestartPeriod *metav1.Duration `json:"maxContainerRestartPeriod,omitempty"`
}
