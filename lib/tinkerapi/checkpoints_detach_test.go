package tinkerapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// detachPage is a compact listing page whose entries differ by page
// (p), with an ID that is not its path's tail and a run ID in one entry
// each, so every branch of detachCheckpoints is taken.
func detachPage(p int) string {
	var b strings.Builder
	b.WriteString(`{"checkpoints":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		id, typ := fmt.Sprintf("weights/p%d-%04d", p, i), "training"
		path := fmt.Sprintf("tinker://run-%d:train:0/%s", p, id)
		if i%2 == 1 {
			typ = "sampler"
		}
		if i == 7 {
			path = fmt.Sprintf("tinker://run-%d:train:0/elsewhere", p)
		}
		fmt.Fprintf(&b, `{"checkpoint_id":%q,"checkpoint_type":%q,"time":"2026-11-2%dT10:00:%02dZ","tinker_path":%q,"size_bytes":%d,"public":false,"expires_at":null}`, id, typ, p, i, path, 1000*p+i)
	}
	b.WriteString(`,{"checkpoint_id":"x","checkpoint_type":"sampler","time":"2026-11-20T10:00:00Z","tinker_path":"tinker://r/x","training_run_id":"run-x"}`)
	fmt.Fprintf(&b, `],"cursor":{"offset":%d,"limit":51,"total_count":153}}`, 51*p)
	return b.String()
}

// TestDetachCheckpointsOwnsItsStrings: once detached, a page decoded by
// the fast reader no longer depends on the buffer it was read from.
func TestDetachCheckpointsOwnsItsStrings(t *testing.T) {
	body := []byte(detachPage(1))
	want, err := decodeCheckpoints([]byte(string(body)), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := fastCheckpoints(body, nil)
	if !ok {
		t.Fatal("the fast reader refused the page")
	}
	detachCheckpoints(got.Checkpoints)
	for i := range body {
		body[i] = '#'
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the buffer was overwritten:\ngot  %+v\nwant %+v", got.Checkpoints[:2], want.Checkpoints[:2])
	}
}

// TestPooledPagesStayIntact: pages read one after another into the
// reused buffers over loopback each keep their own entries.
func TestPooledPagesStayIntact(t *testing.T) {
	f := detachPagesFake(t)
	c, _ := testClient(t, f)
	var pages []*CheckpointsListResponse
	for p := range 3 {
		page, err := c.ListUserCheckpoints(ctxT(t), 51, 51*p)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
	}
	for p, page := range pages {
		want, _ := decodeCheckpoints([]byte(detachPage(p)), nil)
		if !reflect.DeepEqual(page, want) {
			t.Errorf("page %d changed once later pages were read: %+v", p, page.Checkpoints[0])
		}
	}
}

// detachPagesFake serves /api/v1/checkpoints as pages of 51 entries,
// detachPage(offset/51), for the tests of pages read one after another
// into reused buffers.
func detachPagesFake(t *testing.T) *fake {
	return newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		var p int
		fmt.Sscan(r.URL.Query().Get("offset"), &p)
		writeJSON(w, 200, detachPage(p/51))
		return true
	})
}
