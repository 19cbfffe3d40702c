package server

import (
	"fmt"
	"sync"
	"testing"
)

// The per-directory writer locks last only while held: after archives
// of several checkpoints were generated (and one deleted), no entry stays.
func TestArchiveDirLocksDoNotAccumulate(t *testing.T) {
	e := newEnv(t, manifestFor(1, 3), Options{})
	run := firstRun(e)
	for _, ck := range []string{"weights/0000", "sampler_weights/0000", "weights/final"} {
		path := "/api/v1/training_runs/" + run + "/checkpoints/" + ck + "/archive"
		if code, b, _ := e.do("GET", path, nil); code != 302 {
			t.Fatalf("archive %s = %d %s", ck, code, b)
		}
	}
	if code, b, _ := e.do("DELETE", "/api/v1/training_runs/"+run+"/checkpoints/weights/0000", nil); code/100 != 2 {
		t.Fatalf("delete = %d %s", code, b)
	}
	if n := lockEntries(&e.srv.archives.dirs); n != 0 {
		t.Errorf("%d directory lock entries left after every writer finished", n)
	}
}

// Contended locks still exclude each other and leave nothing behind.
func TestDirLocksExcludeAndEmpty(t *testing.T) {
	var d dirLocks
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := fmt.Sprint("d", i%3)
			defer d.lock(dir)()
			mu.Lock()
			inside[dir]++
			n := inside[dir]
			mu.Unlock()
			if n != 1 {
				t.Errorf("%d writers inside %s at once", n, dir)
			}
			mu.Lock()
			inside[dir]--
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := lockEntries(&d); n != 0 {
		t.Errorf("%d entries left", n)
	}
}

func lockEntries(d *dirLocks) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}
