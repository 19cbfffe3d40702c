package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/store"
)

// archiver materialises checkpoint files on first use. Imported and newly
// created checkpoints are recorded with their seed and shape only; the files
// are generated deterministically when someone first asks for the archive,
// so size_bytes (computed from the same plan) is exact before any byte exists.
type archiver struct {
	s      *Server
	group  singleflight.Group
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed map[string]error // background generation failures, by dir
	plans  planCache
	// generated holds the dirs generated here from a seed, by last use:
	// they can be made again, so idle ones are removed (dropIdle).
	generated map[string]time.Time
	dirs      dirLocks // one writer of a checkpoint's files at a time
}

// dirLocks holds a mutex per directory only while someone holds or waits
// for it, so a long-running server's map does not grow with every
// checkpoint it ever wrote.
type dirLocks struct {
	mu sync.Mutex
	m  map[string]*dirLock
}

type dirLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when it reaches 0
}

// lock takes dir's writer lock (generation and saves both write there)
// and returns its release.
func (a *archiver) lock(dir string) func() { return a.dirs.lock(dir) }

func (d *dirLocks) lock(dir string) func() {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]*dirLock{}
	}
	l := d.m[dir]
	if l == nil {
		l = &dirLock{}
		d.m[dir] = l
	}
	l.users++
	d.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		d.mu.Lock()
		if l.users--; l.users == 0 {
			delete(d.m, dir)
		}
		d.mu.Unlock()
	}
}

// generatedKeep is how long generated checkpoint files stay unused on disk.
const generatedKeep = time.Hour

func newArchiver(s *Server) *archiver {
	return &archiver{s: s, failed: map[string]error{}, generated: map[string]time.Time{}}
}

// used records a use of dir's files if they were generated here.
func (a *archiver) used(dir string, generated bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.generated[dir]; ok || generated {
		a.generated[dir] = a.s.now()
	}
}

// keep takes dir out of the generated set: its files now hold trained
// weights, which no seed makes again.
func (a *archiver) keep(dir string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.generated, dir)
}

// dropIdle removes generated files unused for generatedKeep; the next
// request generates them again, identical, from the checkpoint's seed.
func (a *archiver) dropIdle(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for dir, last := range a.generated {
		if now.Sub(last) < generatedKeep {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			a.s.opts.Logf("remove idle generated files: %v", err)
			continue
		}
		delete(a.generated, dir)
	}
}

func (a *archiver) wait() { a.wg.Wait() }

// planCache holds adapter plans by shape: the tensors' names, shapes and
// byte layout are the same for every checkpoint of that shape, only the
// seed differs. Each server (and each import) has its own.
type planCache struct{ m sync.Map } // planKey -> *peft.Plan with seed 0

type planKey struct {
	base             string
	rank             int
	attn, mlp, unemb bool
	dtype            safetensors.DType
}

// dtypeFor: sampler checkpoints are bf16 (what samplers load); training
// checkpoints keep full float32 precision.
func dtypeFor(kind string) safetensors.DType {
	if kind == "sampler_weights" {
		return safetensors.BF16
	}
	return safetensors.F32
}

// get returns the adapter plan of a checkpoint of run with the given seed.
func (pc *planCache) get(run store.Run, kind string, seed uint64) (*peft.Plan, error) {
	k := planKey{run.BaseModel, run.LoraRank, run.TrainAttn, run.TrainMLP, run.TrainUnembed, dtypeFor(kind)}
	v, ok := pc.m.Load(k)
	if !ok {
		p, err := peft.NewPlan(peft.Config{BaseModel: run.BaseModel, Rank: run.LoraRank, TrainAttn: run.TrainAttn,
			TrainMLP: run.TrainMLP, TrainUnembed: run.TrainUnembed, DType: k.dtype})
		if err != nil {
			return nil, err
		}
		v, _ = pc.m.LoadOrStore(k, p)
	}
	p := *v.(*peft.Plan)
	p.Config.Seed = seed
	return &p, nil
}

func (a *archiver) ready(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, peft.CompleteFile))
	return err == nil
}

// materialise writes the checkpoint's files if they are missing. With
// background, it returns at once (errArchivePending) and generates in a
// goroutine. Files of trained or imported weights cannot be generated:
// their absence is an error, never a silent return to the seed's weights.
func (a *archiver) materialise(c store.Checkpoint, background bool) error {
	dir := a.s.checkpointDir(c.RunID, c.Kind, c.Name)
	if a.ready(dir) {
		a.used(dir, false)
		return nil
	}
	if c.FilesOnly {
		return fmt.Errorf("the trained weights of %s are missing from %s: restore them from a backup, or delete the checkpoint",
			c.TinkerPath(), dir)
	}
	run, ok := a.s.st.Run(c.RunID, a.s.now())
	if !ok {
		return fmt.Errorf("training run %s of checkpoint is missing", c.RunID)
	}
	gen := func() (any, error) {
		defer a.lock(dir)()
		if a.ready(dir) {
			return nil, nil
		}
		p, err := a.plans.get(run.Run, c.Kind, c.Seed)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := p.WriteDir(dir); err != nil {
			return nil, err
		}
		// A delete that raced with generation must not leave files behind.
		if _, ok := a.s.st.Checkpoint(c.RunID, c.Kind, c.Name, a.s.now()); !ok {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("checkpoint %s was deleted", c.TinkerPath())
		}
		a.s.opts.Logf("generated %s (%d bytes) in %s", c.TinkerPath(), p.Size(), time.Since(start).Round(time.Millisecond))
		a.used(dir, true)
		return nil, nil
	}
	if !background {
		_, err, _ := a.group.Do(dir, gen)
		return err
	}
	a.mu.Lock()
	if err := a.failed[dir]; err != nil {
		delete(a.failed, dir)
		a.mu.Unlock()
		return err
	}
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if _, err, _ := a.group.Do(dir, gen); err != nil {
			a.s.opts.Logf("generate %s: %v", c.TinkerPath(), err)
			a.mu.Lock()
			a.failed[dir] = err
			a.mu.Unlock()
		}
	}()
	return errArchivePending
}

var errArchivePending = errors.New("archive is being generated")

func (a *archiver) remove(runID, kind, name string) error {
	dir := a.s.checkpointDir(runID, kind, name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove checkpoint files: %w", err)
	}
	return nil
}
