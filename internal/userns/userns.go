package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/atomicfile"
)

const (
	// idsPerPod is the length of each pod's range, the kubelet's default
	// (userNamespaces.idsPerPod).
	idsPerPod = 1 << 16
	// firstID and idsTotal are the kubelet's default span: every host ID
	// from 65536 on (0 to 65535, host root among them, is never mapped).
	firstID  = idsPerPod
	idsTotal = 1<<32 - firstID
	// fileName is the kubelet's file of a pod's mappings in its directory.
	fileName = "userns"
)

// mapping and mappings are the kubelet's userns file.
type mapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type mappings struct {
	UIDMappings []mapping `json:"uidMappings"`
	GIDMappings []mapping `json:"gidMappings"`
}

// Manager hands out the pods' ranges.
type Manager struct {
	podsDir string

	mu sync.Mutex
	// used maps a range's index (host ID / idsPerPod - 1) to its pod.
	used  map[uint32]types.UID
	byPod map[types.UID]uint32
}

// New returns a Manager for the pods whose directories are under podsDir
// (<root-dir>/pods), with the ranges recorded in their userns files
// already taken. A file it cannot read or that does not hold a range of
// this span is an error: handing that range out again could share IDs
// between pods.
func New(podsDir string) (*Manager, error) {
	m := &Manager{podsDir: podsDir, used: map[uint32]types.UID{}, byPod: map[types.UID]uint32{}}
	entries, err := os.ReadDir(podsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespaces: read pod directories: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		b, err := os.ReadFile(m.file(uid))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("user namespaces: %w", err)
		}
		idx, err := parse(b)
		if err != nil {
			return nil, fmt.Errorf("user namespaces: %s: %w", m.file(uid), err)
		}
		if other, taken := m.used[idx]; taken {
			return nil, fmt.Errorf("user namespaces: pods %s and %s both hold host IDs %d-%d", other, uid, hostID(idx), hostID(idx)+idsPerPod-1)
		}
		m.used[idx], m.byPod[uid] = uid, idx
	}
	return m, nil
}

func (m *Manager) file(uid types.UID) string {
	return filepath.Join(m.podsDir, string(uid), fileName)
}

func hostID(idx uint32) uint32 { return firstID + idx*idsPerPod }

// parse checks a userns file as the kubelet does (one mapping, the same
// for users and groups, container ID 0, a whole aligned range of the span)
// and returns its range's index.
func parse(b []byte) (uint32, error) {
	var ms mappings
	if err := json.Unmarshal(b, &ms); err != nil {
		return 0, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	if len(ms.UIDMappings) != 1 || len(ms.GIDMappings) != 1 || ms.UIDMappings[0] != ms.GIDMappings[0] {
		return 0, errors.New("invalid user namespace configuration: want one mapping, the same for users and groups")
	}
	u := ms.UIDMappings[0]
	if u.ContainerID != 0 || u.Length != idsPerPod || u.HostID < firstID || u.HostID%idsPerPod != 0 {
		return 0, fmt.Errorf("invalid user namespace configuration: mapping %+v is not a range of %d host IDs from %d on mapped to 0", u, idsPerPod, firstID)
	}
	return (u.HostID - firstID) / idsPerPod, nil
}

// Mappings returns the user namespace of pod uid's sandbox and containers:
// its range, taken now (and written to its userns file before it is
// returned) if it has none yet.
func (m *Manager) Mappings(uid types.UID) (*runtimeapi.UserNamespace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx, ok := m.byPod[uid]
	if !ok {
		var err error
		if idx, err = m.take(uid); err != nil {
			return nil, err
		}
	}
	ids := []*runtimeapi.IDMapping{{HostId: hostID(idx), ContainerId: 0, Length: idsPerPod}}
	gids := []*runtimeapi.IDMapping{{HostId: hostID(idx), ContainerId: 0, Length: idsPerPod}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids, Gids: gids}, nil
}

// take gives pod uid the lowest free range and writes it down. m.mu is
// held.
func (m *Manager) take(uid types.UID) (uint32, error) {
	var idx uint32
	for ; idx < idsTotal/idsPerPod; idx++ {
		if _, taken := m.used[idx]; !taken {
			break
		}
	}
	if idx == idsTotal/idsPerPod {
		return 0, errors.New("create user namespace: could not find an empty slot to allocate a user namespace")
	}
	m2 := mapping{HostID: hostID(idx), ContainerID: 0, Length: idsPerPod}
	b, err := json.Marshal(mappings{UIDMappings: []mapping{m2}, GIDMappings: []mapping{m2}})
	if err != nil {
		return 0, fmt.Errorf("create user namespace: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(m.file(uid)), 0o750); err != nil {
		return 0, fmt.Errorf("create user namespace: %w", err)
	}
	if err := atomicfile.WriteFile(m.file(uid), b, 0o600); err != nil {
		return 0, fmt.Errorf("create user namespace: %w", err)
	}
	m.used[idx], m.byPod[uid] = uid, idx
	return idx, nil
}

// Release frees pod uid's range, if it has one, and removes its userns
// file: the pod is gone from the runtime.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx, ok := m.byPod[uid]
	if !ok {
		return
	}
	delete(m.byPod, uid)
	delete(m.used, idx)
	_ = os.Remove(m.file(uid))
}
