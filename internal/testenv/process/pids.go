package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// PIDFile is the name of the file, in an environment's directory, that lists
// the processes of a detached environment.
const PIDFile = "pids"

// WritePIDs records procs in <dir>/pids, atomically.
func WritePIDs(dir string, procs []Process) error {
	data, err := json.MarshalIndent(procs, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, PIDFile+".tmp-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, PIDFile))
}

// ReadPIDs reads <dir>/pids; a missing file is no processes and no error.
func ReadPIDs(dir string) ([]Process, error) {
	data, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var procs []Process
	if err := json.Unmarshal(data, &procs); err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", filepath.Join(dir, PIDFile), err)
	}
	return procs, nil
}
