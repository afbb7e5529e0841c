package zookeeper

import (
	"strings"
	"testing"
)

// FuzzParseSrvr checks that any answer parses without panicking, and that
// an accepted answer is a mode the poller knows.
func FuzzParseSrvr(f *testing.F) {
	for _, seed := range []string{
		srvrAnswer("leader", 0x200000000),
		srvrAnswer("follower", 0),
		srvrAnswer("standalone", 0x7fffffffffffffff),
		notServing + "\n",
		"srvr is not executed because it is not in the whitelist.\n",
		"Zxid: 0x\nMode: leader\n",
		"Zxid: 18446744073709551616\nMode: follower\n",
		"Mode:\nZxid:\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseSrvr(b)
		if err != nil {
			return
		}
		if r.serving != (r.leads() || r.follows() || r.mode == "read-only") {
			t.Errorf("parseSrvr(%q) = %+v: serving with an unknown mode, or a mode without serving", b, r)
		}
	})
}

// FuzzZnodeName checks that every key maps to a name ZooKeeper accepts
// and back, and that keyOf accepts only names znodeName makes.
func FuzzZnodeName(f *testing.F) {
	for _, seed := range []string{"", ".", "..", "/scenario/kv/000123", "50%", "%2F", "ü\x00\xff", "k%41"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		name := znodeName(key)
		if name == "." || name == ".." || name == "" || strings.ContainsAny(name, "/") {
			t.Fatalf("znodeName(%q) = %q: not a znode name", key, name)
		}
		for i := 0; i < len(name); i++ {
			if name[i] < 0x20 || name[i] > 0x7e {
				t.Fatalf("znodeName(%q) = %q: byte %#x that ZooKeeper may refuse or re-encode", key, name, name[i])
			}
		}
		if got, ok := keyOf(name); !ok || got != key {
			t.Fatalf("keyOf(znodeName(%q)) = %q, %v", key, got, ok)
		}
		// Read as a name, the input must either be refused or map back
		// to itself.
		if k, ok := keyOf(key); ok && znodeName(k) != key {
			t.Fatalf("keyOf(%q) = %q, whose name is %q", key, k, znodeName(k))
		}
		// Prefixes are preserved, which countRange relies on.
		if len(key) > 0 {
			prefix := key[:len(key)/2]
			if !strings.HasPrefix(name, znodeName(prefix)) {
				t.Fatalf("name %q of %q lacks the name %q of its prefix %q", name, key, znodeName(prefix), prefix)
			}
		}
	})
}

// FuzzParseMntr checks that any mntr answer parses without panicking, and
// that what it accepts is a well-formed value: a summary's count is never
// negative, and only metrics of the list are returned.
func FuzzParseMntr(f *testing.F) {
	for _, seed := range []string{
		"zk_version\t3.8.0\nzk_sum_fsynctime\t12\nzk_cnt_fsynctime\t4\nzk_watch_count\t7\n",
		"zk_cnt_fsynctime\t-1\n",
		"zk_sum_fsynctime\tNaN\nzk_cnt_fsynctime\t1e309\n",
		"zk_watch_count\n\t\t\n",
		"This ZooKeeper instance is not currently serving requests\n",
	} {
		f.Add([]byte(seed))
	}
	names := map[string]bool{}
	for _, m := range serverMetrics {
		names[m.Name] = true
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := parseMntr(b, serverMetrics)
		if err != nil {
			return
		}
		for name, v := range vs {
			if !names[name] {
				t.Errorf("parseMntr(%q) returned %q, which is not a server metric", b, name)
			}
			if v.Count < 0 {
				t.Errorf("parseMntr(%q): %s has a negative count %v", b, name, v.Count)
			}
		}
	})
}
