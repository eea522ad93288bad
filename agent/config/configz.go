package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KubeletConfiguration is the configuration in effect as a kubelet
// config file (the fields minikubelet implements), which /configz serves
// as the kubelet serves its own. The authorization mode is the one in use.
func (c *Config) KubeletConfiguration() *KubeletConfiguration {
	d := func(v time.Duration) metav1.Duration { return metav1.Duration{Duration: v} }
	kc := &KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: configAPIVersion, Kind: configKind},
		StaticPodPath:            c.PodManifestPath,
		SyncFrequency:            d(c.SyncFrequency),
		FileCheckFrequency:       d(c.FileCheckFrequency),
		HTTPCheckFrequency:       d(c.HTTPCheckFrequency),
		StaticPodURL:             c.ManifestURL,
		StaticPodURLHeader:       c.ManifestURLHeader,
		Address:                  c.Address,
		Port:                     int32(c.Port),
		ReadOnlyPort:             int32(c.ReadOnlyPort),
		TLSCertFile:              c.TLSCertFile,
		TLSPrivateKeyFile:        c.TLSPrivateKeyFile,
		ServerTLSBootstrap:       c.RotateServerCertificates,
		RotateCertificates:       c.RotateCertificates,
		HealthzPort:              ptr.To(int32(c.HealthzPort)),
		HealthzBindAddress:       c.HealthzBindAddress,
		EnableDebuggingHandlers:  ptr.To(c.EnableDebuggingHandlers),
		ContainerRuntimeEndpoint: c.RuntimeEndpoint,
		RuntimeRequestTimeout:    d(c.RuntimeRequestTimeout),
		PodLogsDir:               c.PodLogsDir,
		FeatureGates:             c.FeatureGates,
		MaxPods:                  int32(c.MaxPods),
		CgroupDriver:             c.CgroupDriver,
		CgroupsPerQOS:            ptr.To(c.CgroupsPerQOS),
		CgroupRoot:               c.CgroupRoot,
		RegisterWithTaints:       c.RegisterWithTaints,

		ShutdownGracePeriod:             d(c.ShutdownGracePeriod),
		ShutdownGracePeriodCriticalPods: d(c.ShutdownGracePeriodCriticalPods),
		ContainerLogMaxSize:             c.ContainerLogMaxSize,
		ContainerLogMaxFiles:            ptr.To(int32(c.ContainerLogMaxFiles)),
		ContainerLogMonitorInterval:     ptr.To(d(c.ContainerLogMonitorInterval)),
		ImageGCHighThresholdPercent:     ptr.To(int32(c.ImageGCHighThresholdPercent)),
		ImageGCLowThresholdPercent:      ptr.To(int32(c.ImageGCLowThresholdPercent)),
		ImageMinimumGCAge:               d(c.ImageMinimumGCAge),
		NodeStatusUpdateFrequency:       d(c.NodeStatusUpdateFrequency),
		NodeStatusReportFrequency:       d(c.NodeStatusReportFrequency),
		KubeAPIQPS:                      ptr.To(int32(c.KubeAPIQPS)),
		KubeAPIBurst:                    int32(c.KubeAPIBurst),
		ClusterDNS:                      c.ClusterDNS,
		ClusterDomain:                   c.ClusterDomain,
		ResolverConfig:                  ptr.To(c.ResolvConf),
		AllowedUnsafeSysctls:            c.AllowedUnsafeSysctls,

		EvictionHard:                     c.EvictionHard,
		EvictionSoft:                     c.EvictionSoft,
		EvictionSoftGracePeriod:          c.EvictionSoftGracePeriod,
		EvictionMinimumReclaim:           c.EvictionMinimumReclaim,
		EvictionMaxPodGracePeriod:        int32(c.EvictionMaxPodGracePeriod),
		EvictionPressureTransitionPeriod: d(c.EvictionPressureTransitionPeriod),
		MergeDefaultEvictionSettings:     ptr.To(c.MergeDefaultEvictionSettings),
		KernelMemcgNotification:          c.KernelMemcgNotification,
		LocalStorageCapacityIsolation:    ptr.To(c.LocalStorageCapacityIsolation),
		KubeReserved:                     c.KubeReserved,
		SystemReserved:                   c.SystemReserved,
		KubeReservedCgroup:               c.KubeReservedCgroup,
		SystemReservedCgroup:             c.SystemReservedCgroup,
		EnforceNodeAllocatable:           c.EnforceNodeAllocatable,
		FailSwapOn:                       ptr.To(c.FailSwapOn),
		PodPidsLimit:                     ptr.To(c.PodPidsLimit),
	}
	kc.MemorySwap.SwapBehavior = c.MemorySwapBehavior
	kc.CrashLoopBackOff.MaxContainerRestartPeriod = ptr.To(d(c.MaxContainerRestartPeriod))
	kc.Authentication.X509.ClientCAFile = c.ClientCAFile
	kc.Authentication.Webhook.Enabled = ptr.To(c.AuthenticationTokenWebhook)
	kc.Authentication.Webhook.CacheTTL = d(c.AuthenticationTokenWebhookCacheTTL)
	kc.Authentication.Anonymous.Enabled = ptr.To(c.AnonymousAuth)
	kc.Authorization.Mode = c.AuthorizationModeToUse()
	kc.Authorization.Webhook.CacheAuthorizedTTL = d(c.AuthorizationWebhookCacheAuthorizedTTL)
	kc.Authorization.Webhook.CacheUnauthorizedTTL = d(c.AuthorizationWebhookCacheUnauthorizedTTL)
	return kc
}
