package main

import (
	"encoding/json"
	"os"
	"runtime"
	"time"
)

// jsonReport is what --json writes: the run's configuration and, per
// engine in --engines order, its results.
type jsonReport struct {
	Date      string       `json:"date"`
	GoVersion string       `json:"go_version"`
	OS        string       `json:"os"`
	Arch      string       `json:"arch"`
	CPUs      int          `json:"cpus"`
	Config    jsonConfig   `json:"config"`
	Engines   []jsonEngine `json:"engines"`
}

type jsonConfig struct {
	Num              int      `json:"num"`
	Reads            int      `json:"reads"`
	ValueSize        int      `json:"value_size"`
	CompressionRatio float64  `json:"compression_ratio"`
	BloomBits        int      `json:"bloom_bits"`
	CacheSize        int64    `json:"cache_size"`
	WriteBufferSize  int      `json:"write_buffer_size"`
	BlockSize        int      `json:"block_size"`
	PrefixSize       int      `json:"prefix_size"`
	RangeFilterBits  int      `json:"range_filter_bits"`
	Compact          bool     `json:"compact"`
	Rounds           int      `json:"rounds"`
	Seed             uint64   `json:"seed"`
	Benchmarks       []string `json:"benchmarks"`
	Threads          int      `json:"threads"`
	WriteRate        float64  `json:"write_rate"`
	SlowGetUs        float64  `json:"slow_get_us"`
	ZipfS            float64  `json:"zipf_s"`
	ExistingDB       string   `json:"existing_db,omitempty"`
	ExistingReadOnly bool     `json:"existing_read_only,omitempty"`
	// Base is the engine the ratios compare with (the first that ran).
	Base string `json:"base"`
}

type jsonEngine struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Error is why the engine did not run (--existing_db: it cannot open
	// the store).
	Error   string       `json:"error,omitempty"`
	Levels  string       `json:"levels,omitempty"`
	Disk    *diskUsage   `json:"disk_after_load,omitempty"`
	Results []jsonResult `json:"results,omitempty"`
}

type jsonResult struct {
	Name string `json:"name"`
	// The median round's figures.
	Ops       int     `json:"ops"`
	Found     int     `json:"found"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"`
	// Ratio is the base engine's speed over this one's (above 1: the
	// base is faster), as in the table.
	Ratio           float64   `json:"base_ratio"`
	RoundsOpsPerSec []float64 `json:"rounds_ops_per_sec"`
	// CPU time of the whole process meanwhile (every thread), and per
	// operation.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUUsPerOp float64 `json:"cpu_us_per_op"`
	// The scans: entries returned, and what the engine read from its
	// table files (-1: not counted).
	Keys    int   `json:"keys,omitempty"`
	Blocks  int64 `json:"table_blocks_read,omitempty"`
	IOBytes int64 `json:"table_bytes_read,omitempty"`
	// readwhilewriting.
	Latency *latencySummary `json:"get_latency,omitempty"`
	Writer  *jsonWriter     `json:"writer,omitempty"`
}

type jsonWriter struct {
	TargetPerSec   float64 `json:"target_per_sec"`
	AchievedPerSec float64 `json:"achieved_per_sec"`
	Writes         int64   `json:"writes"`
}

func buildReport(cfg *config, names []string, res map[string]map[string][]measurement, last map[string]engineRun) *jsonReport {
	rep := &jsonReport{
		Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		Config: jsonConfig{
			Num: cfg.num, Reads: cfg.reads, ValueSize: cfg.valueSize, CompressionRatio: cfg.compressionRatio,
			BloomBits: cfg.bloomBits, CacheSize: cfg.cacheSize, WriteBufferSize: cfg.writeBufferSize, BlockSize: cfg.blockSize,
			PrefixSize: cfg.prefixSize, RangeFilterBits: cfg.rangeFilterBits, Compact: cfg.doCompact, Rounds: cfg.rounds, Seed: cfg.seed,
			Threads: cfg.threads, WriteRate: cfg.writeRate, SlowGetUs: us(cfg.slowGet), ZipfS: cfg.zipfS, ExistingDB: cfg.existingDB, ExistingReadOnly: cfg.existingReadOnly,
		},
	}
	for _, b := range benchNames {
		if ran(cfg, b) {
			rep.Config.Benchmarks = append(rep.Config.Benchmarks, b)
		}
	}
	for _, n := range names {
		if res[n] != nil && rep.Config.Base == "" {
			rep.Config.Base = n
		}
	}
	for _, n := range names {
		r := last[n]
		je := jsonEngine{Name: n, Version: r.version, Levels: r.levels}
		if r.openError != nil {
			je.Error = r.openError.Error()
		}
		if r.measured {
			d := r.disk
			je.Disk = &d
		}
		for _, b := range benchNames {
			if res[n] == nil || !ran(cfg, b) {
				continue
			}
			m := median(res[n][b])
			jr := jsonResult{
				Name: b, Ops: m.ops, Found: m.found, Seconds: m.elapsed.Seconds(), OpsPerSec: m.opsPerSec(),
				MBPerSec: float64(m.bytes) / 1048576 / max(m.elapsed.Seconds(), 1e-9),
				Ratio:    ratio(res, rep.Config.Base, n, b),
				Keys:     m.keys, Blocks: m.blocks, IOBytes: m.ioBytes,
				CPUSeconds: m.cpu.Seconds(), CPUUsPerOp: us(m.cpuPerOp()),
			}
			for _, rm := range res[n][b] {
				jr.RoundsOpsPerSec = append(jr.RoundsOpsPerSec, rm.opsPerSec())
			}
			if m.lat != nil {
				jr.Latency = m.lat.summary(cfg.slowGet)
				jr.Writer = &jsonWriter{TargetPerSec: cfg.writeRate, AchievedPerSec: m.writesPerSec(), Writes: m.writes}
			}
			je.Results = append(je.Results, jr)
		}
		rep.Engines = append(rep.Engines, je)
	}
	return rep
}

func writeJSON(path string, rep *jsonReport) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
