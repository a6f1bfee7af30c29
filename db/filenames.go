package db

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/vfs"
)

type fileType int

const (
	fileTypeLog fileType = iota
	fileTypeTable
	fileTypeManifest
	fileTypeCurrent
	fileTypeLock
	fileTypeInfoLog
	fileTypeTemp
)

func logFileName(dir string, num uint64) string   { return vfs.Join(dir, fmt.Sprintf("%06d.log", num)) }
func tableFileName(dir string, num uint64) string { return vfs.Join(dir, fmt.Sprintf("%06d.sst", num)) }
func manifestFileName(dir string, num uint64) string {
	return vfs.Join(dir, fmt.Sprintf("MANIFEST-%06d", num))
}
func tempFileName(dir string, num uint64) string {
	return vfs.Join(dir, fmt.Sprintf("%06d.dbtmp", num))
}
func currentFileName(dir string) string { return vfs.Join(dir, "CURRENT") }
func lockFileName(dir string) string    { return vfs.Join(dir, "LOCK") }
func infoLogFileName(dir string) string { return vfs.Join(dir, "LOG") }

// parseFileName recognises the names of the files a store keeps.
func parseFileName(name string) (fileType, uint64, bool) {
	switch name {
	case "CURRENT":
		return fileTypeCurrent, 0, true
	case "LOCK":
		return fileTypeLock, 0, true
	case "LOG", "LOG.old":
		return fileTypeInfoLog, 0, true
	}
	if rest, ok := strings.CutPrefix(name, "MANIFEST-"); ok {
		n, err := strconv.ParseUint(rest, 10, 64)
		return fileTypeManifest, n, err == nil
	}
	i := strings.IndexByte(name, '.')
	if i <= 0 {
		return 0, 0, false
	}
	n, err := strconv.ParseUint(name[:i], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	switch name[i+1:] {
	case "log":
		return fileTypeLog, n, true
	case "sst":
		return fileTypeTable, n, true
	case "dbtmp":
		return fileTypeTemp, n, true
	}
	return 0, 0, false
}
