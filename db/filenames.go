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

// ldbTableFileName is the name LevelDB (since 1.14) and goleveldb give a
// table, and the one a LevelDB-format store's new tables get.
func ldbTableFileName(dir string, num uint64) string {
	return vfs.Join(dir, fmt.Sprintf("%06d.ldb", num))
}
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
	case "sst", "ldb":
		return fileTypeTable, n, true
	case "dbtmp":
		return fileTypeTemp, n, true
	}
	return 0, 0, false
}

// noteTableNames records which tables of the directory listing names are
// named NNNNNN.ldb, so tablePath finds them.
func (d *DB) noteTableNames(names []string) {
	for _, name := range names {
		if t, num, ok := parseFileName(name); ok && t == fileTypeTable && strings.HasSuffix(name, ".ldb") {
			d.ldbTables.Store(num, true)
		}
	}
}

// tablePath returns the path of table num: NNNNNN.ldb for a table found
// under that name or written by a LevelDB-format store, NNNNNN.sst
// otherwise.
func (d *DB) tablePath(num uint64) string {
	if _, ok := d.ldbTables.Load(num); ok {
		return ldbTableFileName(d.dirname, num)
	}
	return tableFileName(d.dirname, num)
}

// newTablePath returns the path for a new table num, named as the store's
// format names its tables.
func (d *DB) newTablePath(num uint64) string {
	if d.vs.format == FormatLevelDB {
		d.ldbTables.Store(num, true)
	}
	return d.tablePath(num)
}

// removeTable removes table num's file.
func (d *DB) removeTable(num uint64) error {
	err := d.fs.Remove(d.tablePath(num))
	if err == nil {
		d.ldbTables.Delete(num)
	}
	return err
}
