package wal

import (
	"bytes"
	"io"
	"testing"
)

func benchmarkAddRecord(b *testing.B, size int) {
	rec := makeRecord(1, size)
	w := NewWriter(io.Discard)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := w.AddRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddRecord100(b *testing.B) { benchmarkAddRecord(b, 100) }
func BenchmarkAddRecord4K(b *testing.B)  { benchmarkAddRecord(b, 4<<10) }
func BenchmarkAddRecord1M(b *testing.B)  { benchmarkAddRecord(b, 1<<20) }

func benchmarkReader(b *testing.B, size int) {
	var recs [][]byte
	for i := 0; i < (8<<20)/size; i++ {
		recs = append(recs, makeRecord(i, size))
	}
	log, _, _ := writeLog(b, recs)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(log))
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != len(recs) {
			b.Fatalf("read %d records, want %d", n, len(recs))
		}
	}
}

func BenchmarkReader100(b *testing.B) { benchmarkReader(b, 100) }
func BenchmarkReader4K(b *testing.B)  { benchmarkReader(b, 4<<10) }
func BenchmarkReader64K(b *testing.B) { benchmarkReader(b, 64<<10) }
