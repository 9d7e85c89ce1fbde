package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// credentials is the client's saved state, one entry per server URL: the session token of
// `atelier login` and the workspace of `atelier workspace use`. It lives in
// credentialsPath() with mode 0600, since a token is as good as the password.
type credentials struct {
	Servers map[string]serverCredentials `json:"servers"`
}

// serverCredentials is what the client remembers about one server.
type serverCredentials struct {
	Username  string `json:"username,omitempty"`
	Token     string `json:"token,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// credentialsPath is atelier/credentials.json in the user config directory
// ($XDG_CONFIG_HOME or ~/.config on Linux).
func credentialsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the user config directory for the credentials file: %w (set $XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(dir, "atelier", "credentials.json"), nil
}

// loadCredentials reads the credentials file; a missing file is empty credentials.
func loadCredentials() (*credentials, error) {
	path, err := credentialsPath()
	if err != nil {
		return nil, err
	}
	c := &credentials{Servers: map[string]serverCredentials{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("read credentials %s: %w (delete the file and run `atelier login` again)", path, err)
	}
	if c.Servers == nil {
		c.Servers = map[string]serverCredentials{}
	}
	return c, nil
}

// save writes the credentials file atomically with mode 0600 (its directory 0700).
func (c *credentials) save() error {
	path, err := credentialsPath()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*.json")
	if err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; Chmod keeps it so under any umask.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save credentials: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	return nil
}
