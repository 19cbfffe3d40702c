package engine

import (
	"fmt"
	"strings"
	"sync"
)

// Pool loads base models on first use and keeps them, so every sampler of a
// base model (and of its adapters) shares one copy of the weights. It is
// safe for concurrent use; a model is loaded once even when many requests
// ask for it at the same time.
type Pool struct {
	// Dirs maps base-model names to Hugging Face model directories
	// (`tinker serve --model NAME=DIR`). Names not listed are looked up in
	// the Hugging Face cache; the tiny models are built in.
	Dirs map[string]string
	// Options load the models of Dirs and of the Hugging Face cache
	// (`tinker serve --bf16-compute` sets BF16Compute).
	Options LoadOptions

	mu       sync.Mutex
	models   map[string]*poolEntry
	adapters map[adapterKey]*adapterEntry
	tick     uint64
}

// maxAdapters bounds the adapters kept loaded; the least recently used
// one is dropped beyond it (adapters reload in milliseconds).
const maxAdapters = 32

type adapterKey struct{ base, dir string }

type adapterEntry struct {
	once sync.Once
	m    *Model
	err  error
	used uint64
}

// Sampler returns the base model with the PEFT adapter in adapterDir
// applied ("" for the base model itself). Adapters are cached by directory;
// checkpoints are immutable once written, so a cached adapter stays valid.
func (p *Pool) Sampler(baseModel, adapterDir string) (*Model, error) {
	base, err := p.Model(baseModel)
	if err != nil || adapterDir == "" {
		return base, err
	}
	key := adapterKey{base.name, adapterDir}
	p.mu.Lock()
	if p.adapters == nil {
		p.adapters = map[adapterKey]*adapterEntry{}
	}
	e := p.adapters[key]
	if e == nil {
		e = &adapterEntry{}
		p.adapters[key] = e
		if len(p.adapters) > maxAdapters {
			var oldest adapterKey
			first := true
			for k, v := range p.adapters {
				if k != key && (first || v.used < p.adapters[oldest].used) {
					oldest, first = k, false
				}
			}
			delete(p.adapters, oldest)
		}
	}
	p.tick++
	e.used = p.tick
	p.mu.Unlock()
	e.once.Do(func() { e.m, e.err = base.WithAdapter(adapterDir) })
	if e.err != nil {
		p.mu.Lock()
		if p.adapters[key] == e {
			delete(p.adapters, key)
		}
		p.mu.Unlock()
	}
	return e.m, e.err
}

// DropAdapter forgets the adapter loaded from dir, for when the files there
// are deleted (and may later be replaced by others).
func (p *Pool) DropAdapter(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.adapters {
		if k.dir == dir {
			delete(p.adapters, k)
		}
	}
}

type poolEntry struct {
	once sync.Once
	m    *Model
	err  error
}

// Model returns the named base model, loading it on first use.
func (p *Pool) Model(name string) (*Model, error) {
	key := name
	if i := strings.IndexByte(key, ':'); i >= 0 {
		key = key[:i]
	}
	p.mu.Lock()
	if p.models == nil {
		p.models = map[string]*poolEntry{}
	}
	e := p.models[key]
	if e == nil {
		e = &poolEntry{}
		p.models[key] = e
	}
	p.mu.Unlock()
	e.once.Do(func() { e.m, e.err = p.load(key) })
	if e.err != nil {
		// Forget failures so a later call can succeed once the weights exist.
		p.mu.Lock()
		if p.models[key] == e {
			delete(p.models, key)
		}
		p.mu.Unlock()
	}
	return e.m, e.err
}

// Servable reports whether Model could load the named base model now
// without loading it: nil when its weights are built in, given in Dirs or
// in the Hugging Face cache, else the error that says how to provide them.
func (p *Pool) Servable(name string) error {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if _, ok := p.Dirs[name]; ok {
		return nil
	}
	for _, t := range TinyModels() {
		if strings.EqualFold(name, t) {
			return nil
		}
	}
	_, err := FindModelDir(name)
	return err
}

func (p *Pool) load(name string) (*Model, error) {
	if dir, ok := p.Dirs[name]; ok {
		m, err := LoadDirWith(dir, p.Options)
		if err != nil {
			return nil, fmt.Errorf("load %s from %s: %w", name, dir, err)
		}
		m.name = name
		return m, nil
	}
	for _, t := range TinyModels() {
		if strings.EqualFold(name, t) {
			return Load(t)
		}
	}
	dir, err := FindModelDir(name)
	if err != nil {
		return nil, err
	}
	m, err := LoadDirWith(dir, p.Options)
	if err != nil {
		return nil, fmt.Errorf("load %s from %s: %w", name, dir, err)
	}
	m.name = name
	return m, nil
}
