package manifest

import (
	"github.com/bloomkv/bloomkv/internal/base"
)

// Builder accumulates VersionEdits on top of a base Version and produces
// the resulting Version. The db package uses one at recovery (to replay a
// MANIFEST) and one for every new edit. The base Version is not modified.
type Builder struct {
	base *Version
	// where maps the file number of every live table (base and added, minus
	// deleted) to its level.
	where  map[uint64]int
	levels [NumLevels]levelDelta
}

// levelDelta is what the applied edits did to one level.
type levelDelta struct {
	deleted map[uint64]struct{}      // base tables removed from the level
	added   map[uint64]*FileMetadata // tables added (and not since deleted)
}

// NewBuilder returns a Builder starting from base; a nil base is the empty
// Version. base should come from Builder.Finish (or be the zero Version).
func NewBuilder(base *Version) *Builder {
	if base == nil {
		base = &Version{}
	}
	b := &Builder{base: base, where: make(map[uint64]int)}
	for level, files := range base.Files {
		for _, f := range files {
			b.where[f.FileNum] = level
		}
	}
	return b
}

// Apply applies e: first its deletions, then its additions. It fails,
// leaving the Builder unchanged, when e deletes a table that is not live at
// the named level, deletes one table twice, adds a file number that is
// already live (after e's deletions) or that e adds twice, names a level
// outside [0, NumLevels), or adds a table whose metadata breaks the package
// invariants. Errors wrap base.ErrCorruption, since at recovery they mean
// the MANIFEST is inconsistent. Apply ignores e's counters and comparer.
func (b *Builder) Apply(e *VersionEdit) error {
	// Validate everything first, so that a failed Apply changes nothing.
	var deleted map[uint64]struct{}
	for _, d := range e.DeletedFiles {
		if d.Level < 0 || d.Level >= NumLevels {
			return base.CorruptionErrorf("manifest: deleted file %06d: level %d out of range", d.FileNum, d.Level)
		}
		if _, dup := deleted[d.FileNum]; dup {
			return base.CorruptionErrorf("manifest: file %06d deleted twice in one edit", d.FileNum)
		}
		if level, ok := b.where[d.FileNum]; !ok || level != d.Level {
			return base.CorruptionErrorf("manifest: deleted file %06d is not in L%d", d.FileNum, d.Level)
		}
		if deleted == nil {
			deleted = make(map[uint64]struct{}, len(e.DeletedFiles))
		}
		deleted[d.FileNum] = struct{}{}
	}
	var added map[uint64]struct{}
	for _, n := range e.NewFiles {
		if n.Meta == nil {
			return base.CorruptionErrorf("manifest: new file entry without metadata")
		}
		num := n.Meta.FileNum
		if n.Level < 0 || n.Level >= NumLevels {
			return base.CorruptionErrorf("manifest: new file %06d: level %d out of range", num, n.Level)
		}
		if err := n.Meta.check(); err != nil {
			return base.CorruptionErrorf("manifest: new file %06d: %v", num, err)
		}
		if _, dup := added[num]; dup {
			return base.CorruptionErrorf("manifest: file %06d added twice in one edit", num)
		}
		if _, live := b.where[num]; live {
			if _, del := deleted[num]; !del {
				return base.CorruptionErrorf("manifest: added file %06d is already live", num)
			}
		}
		if added == nil {
			added = make(map[uint64]struct{}, len(e.NewFiles))
		}
		added[num] = struct{}{}
	}

	for _, d := range e.DeletedFiles {
		ld := &b.levels[d.Level]
		if _, ok := ld.added[d.FileNum]; ok {
			delete(ld.added, d.FileNum)
		} else {
			if ld.deleted == nil {
				ld.deleted = make(map[uint64]struct{})
			}
			ld.deleted[d.FileNum] = struct{}{}
		}
		delete(b.where, d.FileNum)
	}
	for _, n := range e.NewFiles {
		ld := &b.levels[n.Level]
		if ld.added == nil {
			ld.added = make(map[uint64]*FileMetadata)
		}
		ld.added[n.Meta.FileNum] = n.Meta
		b.where[n.Meta.FileNum] = n.Level
	}
	return nil
}

// buildIndex indexes the tables of a level: level 0's for InRangeLevel0,
// a sorted level's for its searches.
func buildIndex(level int, files []*FileMetadata) *levelIndex {
	if level == 0 {
		return buildLevel0Index(files)
	}
	return buildLevelIndex(files)
}

// Finish returns the Version the base and the applied edits describe,
// ordered by the rules in the package documentation. It fails, with an
// error wrapping base.ErrCorruption, when two tables of a level >= 1 have
// intersecting user-key ranges. Levels the edits did not touch share their
// table slice with the base. The Builder may be used again afterwards.
func (b *Builder) Finish() (*Version, error) {
	v := &Version{}
	for level := range v.Files {
		ld := &b.levels[level]
		baseFiles := b.base.Files[level]
		if len(ld.deleted) == 0 && len(ld.added) == 0 {
			v.Files[level] = baseFiles[:len(baseFiles):len(baseFiles)]
			v.SharedBoundaries[level] = b.base.SharedBoundaries[level]
			v.index[level] = b.base.index[level]
			if v.index[level] == nil {
				v.index[level] = buildIndex(level, v.Files[level])
			}
			continue
		}
		files := make([]*FileMetadata, 0, len(baseFiles)-len(ld.deleted)+len(ld.added))
		for _, f := range baseFiles {
			if _, del := ld.deleted[f.FileNum]; !del {
				files = append(files, f)
			}
		}
		for _, f := range ld.added {
			files = append(files, f)
		}
		sortLevel(level, files)
		shared, err := checkOrdering(level, files)
		if err != nil {
			return nil, err
		}
		v.SharedBoundaries[level] = shared
		if len(files) > 0 {
			v.Files[level] = files
			v.index[level] = buildIndex(level, files)
		}
	}
	return v, nil
}
