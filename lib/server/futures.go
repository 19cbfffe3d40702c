package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// future is one asynchronous request. Endpoints that do work (create_model,
// the saves, load_weights, asample) answer at once with a request_id, and
// the client polls retrieve_future until the result is ready. Futures live
// in memory only: after a restart, or an hour unclaimed, a poll answers 410
// and the client resubmits. See docs/protocol.md, "Futures".
type future struct {
	id        string
	readyAt   time.Time // wall clock: results are held back until then
	done      chan struct{}
	result    []byte // JSON result (nil when proto is set and asked for)
	proto     []byte // protobuf result for sample futures
	failure   []byte // {"error","category"} JSON
	sentMeta  bool
	createdAt time.Time
}

type futureTable struct {
	wg   sync.WaitGroup // running work, waited for by Close
	mu   sync.Mutex
	m    map[string]*future
	seqs map[string]int
}

func newFutureTable() *futureTable {
	return &futureTable{m: map[string]*future{}, seqs: map[string]int{}}
}

// newFuture registers a future and runs work in the background. work
// returns the JSON result, an optional protobuf form, or an error whose
// category comes from userError.
func (s *Server) newFuture(base string, work func() (json []byte, proto []byte, err error)) *future {
	t := s.futures
	t.mu.Lock()
	id := base
	for n := 1; t.m[id] != nil; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	f := &future{id: id, readyAt: time.Now().Add(s.opts.FutureDelay), done: make(chan struct{}), createdAt: time.Now()}
	t.m[id] = f
	// Forget futures nobody collected for an hour.
	for k, old := range t.m {
		if time.Since(old.createdAt) > time.Hour {
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res, pb, err := work()
		if err != nil {
			cat := "server"
			var ue userError
			if errors.As(err, &ue) {
				cat = "user"
			}
			f.failure, _ = json.Marshal(map[string]string{"error": err.Error(), "category": cat})
		} else {
			f.result, f.proto = res, pb
		}
		close(f.done)
	}()
	return f
}

// busyQueue is how many unfinished earlier requests make a poll report
// paused_capacity instead of active.
const busyQueue = 8

// pendingBefore counts unfinished futures submitted before f.
func (t *futureTable) pendingBefore(f *future) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, o := range t.m {
		if o == f || !o.createdAt.Before(f.createdAt) {
			continue
		}
		select {
		case <-o.done:
			if time.Now().Before(o.readyAt) {
				n++
			}
		default:
			n++
		}
	}
	return n
}

type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	var body struct {
		RequestID         string `json:"request_id"`
		AllowMetadataOnly bool   `json:"allow_metadata_only"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	s.futures.mu.Lock()
	f := s.futures.m[body.RequestID]
	s.futures.mu.Unlock()
	if f == nil {
		// Futures live in memory: after a restart (or an hour unclaimed) the
		// promise is gone, and 410 tells clients to resubmit the request.
		return errorf(http.StatusGone, "Future %s expired or unknown; resubmit the request", body.RequestID)
	}
	hold := time.NewTimer(s.opts.PollHold)
	defer hold.Stop()
	wait := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		case <-hold.C:
			return false
		case <-r.Context().Done():
			return false
		}
	}
	ready := true
	select {
	case <-f.done:
	default:
		ready = false
		select {
		case <-f.done:
			ready = true
		case <-hold.C:
		case <-r.Context().Done():
		}
	}
	if ready {
		if d := time.Until(f.readyAt); d > 0 {
			ready = wait(time.After(d))
		}
	}
	if !ready {
		out := map[string]string{"type": "try_again", "request_id": f.id, "queue_state": "active"}
		if ahead := s.futures.pendingBefore(f); ahead >= busyQueue {
			out["queue_state"] = "paused_capacity"
			out["queue_state_reason"] = fmt.Sprintf("waiting for capacity: %d requests ahead", ahead)
		}
		writeJSON(w, 200, out)
		return nil
	}
	if f.failure != nil {
		writeRaw(w, 200, f.failure)
		return nil
	}
	wantProto := f.proto != nil && strings.Contains(r.Header.Get("Accept"), "application/x-protobuf")
	payload := f.result
	if wantProto {
		payload = f.proto
	}
	s.futures.mu.Lock()
	sendMeta := body.AllowMetadataOnly && !f.sentMeta && len(payload) > 1<<20
	if sendMeta {
		f.sentMeta = true
	}
	s.futures.mu.Unlock()
	if sendMeta {
		writeJSON(w, 200, map[string]any{"status": "complete_metadata", "response_payload_size": len(payload)})
		return nil
	}
	if wantProto {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		w.WriteHeader(200)
		w.Write(payload)
		return nil
	}
	writeRaw(w, 200, payload)
	return nil
}

func writeFuture(w http.ResponseWriter, f *future, modelID string) {
	out := map[string]string{"request_id": f.id}
	if modelID != "" {
		out["model_id"] = modelID
	}
	writeJSON(w, 200, out)
}
