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

	mu     sync.Mutex
	models map[string]*poolEntry
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

func (p *Pool) load(name string) (*Model, error) {
	if dir, ok := p.Dirs[name]; ok {
		m, err := LoadDir(dir)
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
	m, err := LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load %s from %s: %w", name, dir, err)
	}
	m.name = name
	return m, nil
}
