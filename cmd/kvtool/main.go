// Command kvtool looks inside a bloomkv store: it reads and writes keys,
// lists the tables of the LSM tree, dumps tables, MANIFESTs and write-ahead
// logs, measures a table's filter against theory, and verifies every
// checksum of a store.
//
// Usage:
//
//	kvtool get      [flags] DIR KEY
//	kvtool put      [flags] DIR KEY VALUE
//	kvtool delete   [flags] DIR KEY
//	kvtool scan     [flags] DIR
//	kvtool explain  [flags] DIR KEY
//	kvtool lsm      [flags] DIR
//	kvtool sst      dump|props|check [flags] FILE
//	kvtool manifest dump [flags] FILE|DIR
//	kvtool wal      dump [flags] FILE
//	kvtool check    [flags] DIR
//	kvtool metrics  [flags] DIR
//	kvtool checkpoint [flags] DIR DEST
//
// Every command takes --help. Only put and delete change a store
// (checkpoint writes a new one). get,
// scan and metrics open it with db.Open read-only (db.Options.ReadOnly):
// the write-ahead logs are replayed into memory, so unflushed writes show,
// and nothing in the directory changes; they share the store's LOCK with
// each other, and fail, saying so, while another process has it open for
// writing. put and delete open it read-write and fail while any other
// process has it open. lsm, sst, manifest, wal and check only read files
// and take no lock.
//
// The tables kvtool's writes make (put and delete: the replayed log,
// flushes, compactions; checkpoint: the table of the logs' writes) get the
// store's own filter policies, read back from its tables level by level
// (storeFilters), so a store kvbench made with --filter_policy=blocked
// keeps blocked filters; --filter overrides them, with a note on stderr.
//
// lsm --html FILE and explain --html FILE also draw the tree as one
// self-contained HTML page (htmlpage.go): the levels, a box per table
// coloured by its filter's measured false-positive rate, the MANIFEST's
// version edits replayed step by step, and for explain the lookup's path.
//
// Every command also works on a LevelDB-format store (db.Options.Format:
// one LevelDB or goleveldb wrote, or bloomkv kept in LevelDB's format),
// which the MANIFEST's comparer, leveldb.BytewiseComparator, tells: its
// tables are NNNNNN.ldb files of LevelDB's table format, read through
// package sstable, whose counts (which LevelDB does not record) lsm, sst
// and check compute by a scan (sstable.Reader.ScanProperties); its
// MANIFEST records no sequence numbers (seqs=unknown); its logs hold
// batches alone. check and lsm print the format.
//
// sst, wal dump and manifest dump say so when given a file of another kind
// ("X is not a log file: it is a table ..."), and report a file of their
// kind that is damaged as damaged; a file of no recognisable kind counts
// as damaged when its name is the store's name for the kind (*.sst or
// *.ldb, *.log, MANIFEST-*).
//
// Multi-word flags are spelled with underscores, as kvbench's and
// db_bench's are (--max_len); the same names with hyphens (--max-len) work
// too. Help lists the underscore spellings.
//
// Exit status: 0 on success, 1 when the command fails (including a key
// that is not found, any corruption found and a file of the wrong kind),
// 2 for a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand (or group of subcommands).
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands returns the table of top-level subcommands, in help order.
func commands() []command {
	return []command{
		{"get", "print the value of a key", runGet},
		{"explain", "look a key up and print its path through the tree", runExplain},
		{"put", "set a key to a value", runPut},
		{"delete", "delete a key", runDelete},
		{"scan", "print the keys and values in a range or with a prefix", runScan},
		{"lsm", "list the tables of each level from the MANIFEST", runLSM},
		{"sst", "dump, describe or check one table file (dump|props|check)", runSST},
		{"manifest", "dump every version edit of a MANIFEST (dump)", runManifest},
		{"wal", "dump every batch of a write-ahead log (dump)", runWAL},
		{"check", "verify every checksum of a store's tables, MANIFEST and logs", runCheck},
		{"metrics", "open a store and print its metrics", runMetrics},
		{"checkpoint", "write a consistent copy of a store into a new directory", runCheckpoint},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args (without the program name), writing
// results to stdout and diagnostics to stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		topUsage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "kvtool: unknown command %q\n\n", name)
	topUsage(stderr)
	return exitUsage
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, "kvtool inspects and maintains bloomkv stores.\n\nusage: kvtool COMMAND [flags] ARGS\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun \"kvtool COMMAND --help\" for a command's flags.\n%s\n"+
		"Exit status: 0 success, 1 failure (not found, corruption, a file of the\nwrong kind, I/O), 2 usage error.\n", flagConvention)
}

// cmdFlags is a subcommand's flag set with its synopsis and description.
type cmdFlags struct {
	*flag.FlagSet
	synopsis string // "kvtool get [flags] DIR KEY"
	about    string // paragraph printed under the synopsis
	// aliases are the hyphen spellings (max-len) of the multi-word flags,
	// registered by addAliases and left out of the usage.
	aliases map[string]bool
}

func newFlags(name, synopsis, about string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, synopsis: synopsis, about: about}
}

// flagConvention is printed under the flags of every command that has
// multi-word ones, and by kvtool --help.
const flagConvention = "Multi-word flags are spelled with underscores, as in kvbench and db_bench\n(--max_len); the hyphen spellings (--max-len) work too."

// usage prints the synopsis, the description and the flags, each flag
// under its canonical (underscore) name only.
func (f *cmdFlags) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", f.synopsis, strings.TrimSpace(f.about))
	var canonical []*flag.Flag
	multiWord := false
	f.VisitAll(func(fl *flag.Flag) {
		if !f.aliases[fl.Name] {
			canonical = append(canonical, fl)
			multiWord = multiWord || strings.Contains(fl.Name, "_")
		}
	})
	if len(canonical) == 0 {
		return
	}
	fmt.Fprintf(w, "\nflags:\n")
	for _, fl := range canonical {
		typ, text := flag.UnquoteUsage(fl)
		line := "  --" + fl.Name
		if typ != "" {
			line += " " + typ
		}
		switch {
		case fl.DefValue == "" || fl.DefValue == "0" || fl.DefValue == "false":
		case typ == "string":
			text += fmt.Sprintf(" (default %q)", fl.DefValue)
		default:
			text += fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(text, "\n", "\n    \t"))
	}
	if multiWord {
		fmt.Fprintf(w, "\n%s\n", flagConvention)
	}
}

// addAliases registers, for every flag whose name has an underscore
// (max_len), the same flag spelled with hyphens (max-len), sharing its
// value: kvtool's flags, like kvbench's, use db_bench's underscores, and
// either spelling works. The flag package then parses both itself, so a
// flag's value is never mistaken for a flag name.
func (f *cmdFlags) addAliases() {
	if f.aliases != nil {
		return
	}
	f.aliases = map[string]bool{}
	var multi []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if strings.Contains(fl.Name, "_") {
			multi = append(multi, fl)
		}
	})
	for _, fl := range multi {
		alias := strings.ReplaceAll(fl.Name, "_", "-")
		f.Var(fl.Value, alias, fl.Usage)
		f.aliases[alias] = true
	}
}

// errHelp is returned by parse when --help was asked for and printed.
var errHelp = errors.New("help printed")

// parse parses args, letting flags and positional arguments mix (a "--"
// ends the flags), and checks the number of positional arguments is in
// [minArgs, maxArgs] (maxArgs < 0: no limit). On --help it prints the usage
// to stdout and returns errHelp; on a usage error it prints the error and
// the usage to stderr and returns it. Callers turn the error into a status
// with usageStatus.
func (f *cmdFlags) parse(args []string, minArgs, maxArgs int, stdout, stderr io.Writer) ([]string, error) {
	f.addAliases()
	var pos []string
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.usage(stdout)
			return nil, errHelp
		}
		if err != nil {
			fmt.Fprintf(stderr, "kvtool %s: %v\n\n", f.Name(), err)
			f.usage(stderr)
			return nil, err
		}
		rest := f.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
		err := fmt.Errorf("wrong number of arguments (%d)", len(pos))
		fmt.Fprintf(stderr, "kvtool %s: %v\n\n", f.Name(), err)
		f.usage(stderr)
		return nil, err
	}
	return pos, nil
}

// usageStatus maps an error from parse to an exit status.
func usageStatus(err error) int {
	if errors.Is(err, errHelp) {
		return exitOK
	}
	return exitUsage
}

// fail prints a failure of command name to stderr and returns exitFailure,
// or exitUsage for a flag value found bad only when it was used.
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "kvtool %s: %v\n", name, err)
	if errors.Is(err, errBadFilterFlag) {
		return exitUsage
	}
	return exitFailure
}

// subcommand dispatches "kvtool GROUP SUB ..." to one of subs.
func subcommand(group string, subs map[string]command, args []string, stdout, stderr io.Writer) int {
	names := make([]string, 0, len(subs))
	for n := range subs {
		names = append(names, n)
	}
	sort.Strings(names)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: kvtool %s %s [flags] ARGS\n\n", group, strings.Join(names, "|"))
		for _, n := range names {
			fmt.Fprintf(w, "  %-6s %s\n", n, subs[n].summary)
		}
		fmt.Fprintf(w, "\nRun \"kvtool %s SUBCOMMAND --help\" for its flags.\n", group)
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "kvtool %s: missing subcommand\n\n", group)
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	c, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kvtool %s: unknown subcommand %q\n\n", group, args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}
