package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/cmd/tinker/localapi"
)

// Local is the local server's half of tinker: set by tinker-local's main
// (and by tests), nil in tinker, which does not link it. Commands that
// need it get it from localServer.
var Local localapi.Server

// CompanionName is the executable tinker hands over to for the local
// server: installed beside tinker by make install, or by go install
// github.com/tinkershell/tinker/cmd/tinker-local.
const CompanionName = "tinker-local"

// CompanionEnv carries tinker's version to tinker-local when tinker hands
// over, so that a mismatched pair of executables says so instead of
// behaving as neither version would.
const CompanionEnv = "TINKER_LOCAL_FOR"

// mainArgs are Main's arguments, which tinker passes on to tinker-local.
var mainArgs []string

// localServer returns Local; in tinker it replaces the process with
// tinker-local, given the same arguments, and returns only if that fails.
// Callers call it before doing anything that shows or changes state, so
// the hand-over is invisible.
func localServer() (localapi.Server, error) {
	if Local != nil {
		return Local, nil
	}
	path, err := companionPath()
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), CompanionEnv+"="+Version)
	return nil, execCompanion(path, append([]string{path}, mainArgs...), env)
}

// companionPath is tinker-local beside the running tinker (after
// symlinks, so a link to tinker on PATH finds it too).
func companionPath() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", fmt.Errorf("the local server runs in %s, and tinker cannot tell where it is installed: %v", CompanionName, err)
	}
	path := filepath.Join(filepath.Dir(self), CompanionName)
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("the local server runs in %s, which is not installed beside %s: install both (make install, or go install github.com/tinkershell/tinker/cmd/tinker-local@latest)", CompanionName, self)
	}
	return path, nil
}

// CheckCompanion is tinker-local's first step: when tinker handed over
// (CompanionEnv set), both must be the same version. It clears the
// variable so that nothing tinker-local runs inherits it.
func CheckCompanion() error {
	v, ok := os.LookupEnv(CompanionEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(CompanionEnv)
	if v != Version {
		return fmt.Errorf("tinker %s handed over to %s %s: install both from the same build (make install)", v, CompanionName, Version)
	}
	return nil
}
