package vfs

import "path/filepath"

func absPath(name string) (string, error) { return filepath.Abs(name) }
