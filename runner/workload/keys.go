package workload

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// DefaultZipfS is the zipfian exponent used when a workload leaves ZipfS at 0.
const DefaultZipfS = 1.1

// Value tags. Every value a workload writes starts with an 8-byte big-endian
// tag: the writer (generator) id in the top 24 bits and the writer's sequence
// number in the low 40. A history checker can thus tell any two writes apart,
// and a value read back names the write that produced it.
const (
	// ValueTagSize is the length of the tag; shorter values are grown to it,
	// since telling writes apart matters more than the last few bytes of size.
	ValueTagSize = 8
	// MaxWriters bounds generator ids; the last id is PreloadWriter.
	MaxWriters = 1 << 24
	// PreloadWriter is the writer id of Preload's values; their sequence
	// number is the key's index, so the initial value of every key is known.
	PreloadWriter = MaxWriters - 1
	seqBits       = 40
)

// Keyspace names the keys of one workload: key i is KeyPrefix followed by i
// in decimal, zero-padded on the left to exactly KeySize bytes. Padding the
// number rather than appending filler keeps keys in index order under byte
// comparison, so range scans walk consecutive indexes.
type Keyspace struct {
	prefix string
	size   int
	n      int64
}

// NewKeyspace checks that KeySize can hold the prefix and the widest index
// (the same rule the DSL enforces) and returns the keyspace.
func NewKeyspace(spec plan.WorkloadSpec) (Keyspace, error) {
	if spec.Keyspace < 1 {
		return Keyspace{}, fmt.Errorf("workload %q: keyspace must be at least 1, got %d", spec.Name, spec.Keyspace)
	}
	digits := len(strconv.FormatInt(spec.Keyspace-1, 10))
	if need := len(spec.KeyPrefix) + digits; spec.KeySize < need {
		return Keyspace{}, fmt.Errorf("workload %q: key_size %d cannot hold prefix %q plus a %d-digit index: need at least %d bytes",
			spec.Name, spec.KeySize, spec.KeyPrefix, digits, need)
	}
	return Keyspace{prefix: spec.KeyPrefix, size: spec.KeySize, n: spec.Keyspace}, nil
}

// Len is the number of keys.
func (k Keyspace) Len() int64 { return k.n }

// Key returns the name of key i, for i in [0, Len()).
func (k Keyspace) Key(i int64) string {
	var buf [64]byte
	if k.size <= len(buf) {
		return string(k.AppendKey(buf[:0], i))
	}
	return string(k.AppendKey(make([]byte, 0, k.size), i))
}

// AppendKey appends the name of key i, for i in [0, Len()), to dst.
func (k Keyspace) AppendKey(dst []byte, i int64) []byte {
	var num [20]byte
	d := strconv.AppendInt(num[:0], i, 10)
	dst = append(dst, k.prefix...)
	for range k.size - len(k.prefix) - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// Index is the inverse of Key: it reports the index a key names, and false
// for a key outside the keyspace.
func (k Keyspace) Index(key string) (int64, bool) {
	if len(key) != k.size || !strings.HasPrefix(key, k.prefix) {
		return 0, false
	}
	i, err := strconv.ParseInt(key[len(k.prefix):], 10, 64)
	if err != nil || i < 0 || i >= k.n {
		return 0, false
	}
	return i, true
}

// prefixEnd is the smallest key greater than every key starting with p, or
// "" when there is none (empty or all-0xff prefix).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// AppendValue appends a value of max(size, ValueTagSize) bytes to dst: the
// tag of (writer, seq) followed by a fixed filler pattern.
func AppendValue(dst []byte, size int, writer int, seq uint64) []byte {
	tag := uint64(writer)<<seqBits | seq&(1<<seqBits-1)
	dst = binary.BigEndian.AppendUint64(dst, tag)
	const alphabet = "abcdefghijklmnopqrstuvwxyz"
	for i := ValueTagSize; i < size; { // byte i is alphabet[i%26], copied in runs
		off := i % len(alphabet)
		n := min(len(alphabet)-off, size-i)
		dst = append(dst, alphabet[off:off+n]...)
		i += n
	}
	return dst
}

// ParseValue returns the writer and sequence number tagged on a value that
// AppendValue built; ok is false when v is too short to carry a tag.
func ParseValue(v []byte) (writer int, seq uint64, ok bool) {
	if len(v) < ValueTagSize {
		return 0, 0, false
	}
	tag := binary.BigEndian.Uint64(v)
	return int(tag >> seqBits), tag & (1<<seqBits - 1), true
}

type distribution int

const (
	distUniform distribution = iota
	distSequential
	distZipfian
)

type opChoice struct {
	op    string
	upto  float64 // cumulative weight: pick when the draw is below it
	write bool
}

// genConfig is what every generator of one workload shares, validated once.
type genConfig struct {
	keys       Keyspace
	dist       distribution
	zipfS      float64
	seed       uint64
	mix        []opChoice
	valueSize  int
	rangeEnd   string
	rangeLimit int
	// next is the sequential distribution's next index, one counter for
	// all of the workload's generators (see NextIndex).
	next atomic.Int64
}

func newGenConfig(spec plan.WorkloadSpec) (*genConfig, error) {
	keys, err := NewKeyspace(spec)
	if err != nil {
		return nil, err
	}
	c := &genConfig{keys: keys, seed: uint64(spec.Seed), valueSize: spec.ValueSize,
		rangeEnd: prefixEnd(spec.KeyPrefix), rangeLimit: spec.RangeLimit}
	switch spec.Distribution {
	case plan.DistUniform, "":
		c.dist = distUniform
	case plan.DistSequential:
		c.dist = distSequential
	case plan.DistZipfian:
		c.dist, c.zipfS = distZipfian, spec.ZipfS
		if c.zipfS == 0 {
			c.zipfS = DefaultZipfS
		}
		if !(c.zipfS > 1) {
			return nil, fmt.Errorf("workload %q: zipf_s must be greater than 1, got %v", spec.Name, spec.ZipfS)
		}
	default:
		return nil, fmt.Errorf("workload %q: unknown distribution %q (want %s, %s or %s)",
			spec.Name, spec.Distribution, plan.DistSequential, plan.DistUniform, plan.DistZipfian)
	}
	total := 0.0
	for _, m := range spec.Mix {
		if !(m.Weight >= 0) || math.IsInf(m.Weight, 0) {
			return nil, fmt.Errorf("workload %q: weight of %q must be a finite number >= 0, got %v", spec.Name, m.Op, m.Weight)
		}
		total += m.Weight
	}
	if !(total > 0) {
		return nil, fmt.Errorf("workload %q: the operation mix has no positive weight", spec.Name)
	}
	// Weights are renormalised so a mix that sums to 0.999 still always
	// picks something; the last choice absorbs rounding.
	acc := 0.0
	for _, m := range spec.Mix {
		if m.Weight == 0 {
			continue
		}
		if !isOp(m.Op) {
			return nil, fmt.Errorf("workload %q: unknown operation %q in mix", spec.Name, m.Op)
		}
		acc += m.Weight / total
		c.mix = append(c.mix, opChoice{op: m.Op, upto: acc, write: isWrite(m.Op)})
	}
	c.mix[len(c.mix)-1].upto = math.Inf(1)
	return c, nil
}

func isOp(op string) bool {
	for _, o := range plan.AllOps {
		if o == op {
			return true
		}
	}
	return false
}

// isWrite matches plan.WorkloadSpec.Writes: these ops may change the store.
func isWrite(op string) bool { return op == plan.OpPut || op == plan.OpDelete || op == plan.OpTxn }

// Generator produces one worker's stream of operations: op kinds by the mix
// weights, keys by the distribution, values tagged with the generator's id
// and a sequence number. Two generators built from the same spec and id
// produce the same stream, but for sequential keys, which the generators of
// one workload draw in turn from one walk (NextIndex). A Generator is not
// safe for concurrent use; the generators of one workload are, with each
// other.
type Generator struct {
	cfg  *genConfig
	id   int
	rng  *rand.Rand
	zipf *rand.Zipf
	seq  uint64 // next value sequence number
}

// NewGenerator returns generator id (0 <= id < PreloadWriter) of the workload.
// Its randomness is seeded from spec.Seed and id, so runs are reproducible.
func NewGenerator(spec plan.WorkloadSpec, id int) (*Generator, error) {
	if id < 0 || id >= PreloadWriter {
		return nil, fmt.Errorf("workload %q: generator id %d out of range [0, %d)", spec.Name, id, PreloadWriter)
	}
	cfg, err := newGenConfig(spec)
	if err != nil {
		return nil, err
	}
	return newGenerator(cfg, id), nil
}

func newGenerator(cfg *genConfig, id int) *Generator {
	// splitmix64 decorrelates the streams of neighbouring ids and seeds.
	s1 := splitmix64(cfg.seed)
	s2 := splitmix64(cfg.seed ^ splitmix64(uint64(id)+1))
	g := &Generator{cfg: cfg, id: id, rng: rand.New(rand.NewPCG(s1, s2))}
	n := cfg.keys.n
	switch cfg.dist {
	case distZipfian:
		if n > 1 {
			g.zipf = rand.NewZipf(g.rng, cfg.zipfS, 1, uint64(n-1))
		}
	}
	return g
}

func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// mulHi returns floor(frac * n / 2^64): frac read as a fraction of 2^64.
func mulHi(frac, n uint64) uint64 {
	hi, _ := bits.Mul64(frac, n)
	return hi
}

// ID is the generator's id: its writer id in value tags and its client id in
// histories.
func (g *Generator) ID() int { return g.id }

// NextIndex draws the next key index in [0, Keyspace). Zipfian ranks are not
// scrambled: index 0 is the hottest key, which keeps reports readable; no
// store here shards by key range, so adjacency of hot keys costs nothing.
func (g *Generator) NextIndex() int64 {
	n := g.cfg.keys.n
	switch g.cfg.dist {
	case distSequential:
		// One counter for all the workload's generators walks the keyspace
		// in order as the workload's whole, as etcd's tool's
		// --sequential-keys does: its ops in flight together hit
		// neighbouring keys of the store's index. Until 2026-12-07 each
		// worker walked its own lap from a starting point spread over the
		// keyspace, and a thousand workers' puts landed in a thousand places
		// of etcd's key index: the cluster spent 4-6% more CPU a put than
		// under etcd's tool (BenchmarkEtcdPut's cluster column). Which worker
		// draws which index now depends on their timing; the order of the
		// indexes does not.
		return (g.cfg.next.Add(1) - 1) % n
	case distZipfian:
		if g.zipf == nil {
			return 0
		}
		return int64(g.zipf.Uint64())
	default:
		return g.rng.Int64N(n)
	}
}

// NextKey draws the next key.
func (g *Generator) NextKey() string { return g.cfg.keys.Key(g.NextIndex()) }

// NextValue returns a fresh value tagged with the next sequence number. It is
// never reused: a store client may still hold a value after Do returned (a
// timed-out request can sit in a send queue), so sharing a buffer could
// change what gets written.
func (g *Generator) NextValue() []byte {
	size := max(g.cfg.valueSize, ValueTagSize)
	v := AppendValue(make([]byte, 0, size), size, g.id, g.seq)
	g.seq++
	return v
}

// NextOp draws the next operation: its kind by the mix, its key by the
// distribution; puts and txns carry a new value, ranges scan from the key to
// the end of the workload's prefix, at most RangeLimit keys.
func (g *Generator) NextOp() stores.Op {
	kind := g.pick()
	op := stores.Op{Kind: kind.op, Key: g.NextKey()}
	switch kind.op {
	case plan.OpPut, plan.OpTxn:
		op.Value = g.NextValue()
	case plan.OpRange:
		op.End, op.Limit = g.cfg.rangeEnd, g.cfg.rangeLimit
	}
	return op
}

func (g *Generator) pick() opChoice {
	mix := g.cfg.mix
	if len(mix) == 1 {
		return mix[0]
	}
	r := g.rng.Float64()
	for _, c := range mix {
		if r < c.upto {
			return c
		}
	}
	return mix[len(mix)-1]
}
