// Package events records the kubelet's events to the apiserver with
// client-go's event broadcaster, so with the kubelet's aggregation (similar
// events folded into one with a count) and spam filter (a burst of 25 per
// object, then one every 5 minutes), and with the kubelet's source
// component ("kubelet"), which tools and the conformance tests select
// events by.
package events
