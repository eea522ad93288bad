package admission

import v1 "k8s.io/api/core/v1"

// Result is an admit handler's answer: Admit, or a refusal with the
// kubelet's one-word reason (OutOfpods, SysctlForbidden, ...) and a
// message saying why.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// Admitted is the answer of a handler that lets pod in.
var Admitted = Result{Admit: true}

// Handler decides on pod given the other pods the node has admitted and
// still runs (never pod itself). It must not change either, nor block.
type Handler func(pod *v1.Pod, others []*v1.Pod) Result

// Chain is the node's admit handlers, in the order they are asked.
type Chain []Handler

// Admit asks each handler in turn and returns the first refusal, or
// Admitted when none refuses.
func (c Chain) Admit(pod *v1.Pod, others []*v1.Pod) Result {
	for _, h := range c {
		if r := h(pod, others); !r.Admit {
			return r
		}
	}
	return Admitted
}
