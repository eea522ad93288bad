// Package podview answers the HTTP endpoints' questions about the node's
// pods (agent/server): the pods the sources want with their status
// (/pods), the pods the runtime runs (/runningpods/), and which log file
// holds which instance of a container (/containerLogs), chosen from the
// pod's status as the kubelet chooses it.
//
// Data enters through three small interfaces, read at each call: the
// sources' pods (agent/podmanager), their status (agent/status; none
// before the runtime has answered) and the PLEG cache (pleg.Cache). It
// leaves as copies of pods and as log file paths. A View holds no state
// of its own.
package podview
