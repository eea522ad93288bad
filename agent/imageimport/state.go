package imageimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// state is what earlier starts imported, kept in Config.StatePath as JSON:
// per archive file name, the archive's digest and the images it named.
type state struct {
	Files map[string]fileRecord `json:"files"`
}

type fileRecord struct {
	Digest string  `json:"digest"`
	Images []Image `json:"images"`
}

// loadState reads the state at path; a missing file is an empty state.
func loadState(path string) (state, error) {
	st := state{Files: map[string]fileRecord{}}
	data, err := os.ReadFile(path) //nolint:gosec // G304: the agent's own state file under --root-dir
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read image import state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return state{Files: map[string]fileRecord{}}, fmt.Errorf("parse image import state %s: %w", path, err)
	}
	if st.Files == nil {
		st.Files = map[string]fileRecord{}
	}
	return st, nil
}

// save writes st to path atomically (write, sync, rename).
func (st state) save(path string) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image import state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("create directory of %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write image import state: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write image import state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync image import state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close image import state %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace image import state %s: %w", path, err)
	}
	return nil
}
