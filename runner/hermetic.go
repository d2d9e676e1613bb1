package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// hermeticConfig makes home/sub a runtime's configuration folder for a
// hermetic run: it holds copies of the user's login files (logins, from
// the user's folder user) and nothing else. It returns the folder and the
// entries of setup the user has, which the run leaves out.
func hermeticConfig(home, sub, user string, logins, setup []string) (dir string, excluded []string, err error) {
	dir = filepath.Join(home, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	if user == "" {
		return dir, nil, nil
	}
	for _, name := range logins {
		if err := copyIfThere(filepath.Join(user, name), filepath.Join(dir, name)); err != nil {
			return "", nil, fmt.Errorf("copy the login %s: %w", name, err)
		}
	}
	for _, name := range setup {
		if _, err := os.Lstat(filepath.Join(user, name)); err == nil {
			excluded = append(excluded, name)
		}
	}
	return dir, excluded, nil
}

// copyIfThere copies the file src to dst (owner-only), when src exists and
// dst does not yet: a later run of the same session keeps what the runtime
// wrote there (a refreshed token).
func copyIfThere(src, dst string) error {
	data, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
