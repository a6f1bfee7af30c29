package db

import (
	"context"
	"log/slog"

	"github.com/bloomkv/bloomkv/vfs"
)

// eventLog writes the store's human-readable LOG file (and, when the
// embedding program asked for it, to Options.Logger too). A read-only DB
// has no LOG file: file is nil, and events go to Options.Logger only.
type eventLog struct {
	f      vfs.File
	file   *slog.Logger
	extern *slog.Logger
}

func openEventLog(fsys vfs.FS, dirname string, extern *slog.Logger) (*eventLog, error) {
	name := infoLogFileName(dirname)
	if _, err := fsys.Stat(name); err == nil {
		_ = fsys.Rename(name, name+".old")
	}
	f, err := fsys.Create(name)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f, file: slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})), extern: extern}, nil
}

func (l *eventLog) log(level slog.Level, msg string, args ...any) {
	if l == nil {
		return
	}
	if l.file != nil {
		l.file.Log(context.Background(), level, msg, args...)
	}
	if l.extern != nil {
		l.extern.Log(context.Background(), level, msg, append([]any{"component", "bloomkv"}, args...)...)
	}
}

func (l *eventLog) info(msg string, args ...any)  { l.log(slog.LevelInfo, msg, args...) }
func (l *eventLog) warn(msg string, args ...any)  { l.log(slog.LevelWarn, msg, args...) }
func (l *eventLog) error(msg string, args ...any) { l.log(slog.LevelError, msg, args...) }

func (l *eventLog) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
