package tinkerapi

import (
	"strings"
	"unsafe"
)

// detachCheckpoints copies the strings of cps, which the fast reader left
// as views into a response buffer about to be reused, into one allocation
// of their own: the path, the ID as the path's tail where it is one (it
// normally is), and the run ID; the type becomes its constant. About 90
// bytes an entry instead of the page's 240.
func detachCheckpoints(cps []Checkpoint) {
	n := 0
	for i := range cps {
		c := &cps[i]
		n += len(c.TinkerPath) + len(c.TrainingRunID)
		if !strings.HasSuffix(c.TinkerPath, c.CheckpointID) {
			n += len(c.CheckpointID)
		}
		if knownType(c.CheckpointType) == "" {
			n += len(c.CheckpointType)
		}
	}
	a := arena{b: make([]byte, 0, n)}
	for i := range cps {
		c := &cps[i]
		path := a.keep(c.TinkerPath)
		if strings.HasSuffix(path, c.CheckpointID) {
			c.CheckpointID = path[len(path)-len(c.CheckpointID):]
		} else {
			c.CheckpointID = a.keep(c.CheckpointID)
		}
		c.TinkerPath = path
		if t := knownType(c.CheckpointType); t != "" {
			c.CheckpointType = t
		} else {
			c.CheckpointType = a.keep(c.CheckpointType)
		}
		c.TrainingRunID = a.keep(c.TrainingRunID)
	}
}

// knownType is the constant for a checkpoint type, "" for any other.
func knownType(t string) string {
	switch t {
	case "training":
		return "training"
	case "sampler":
		return "sampler"
	}
	return ""
}

// arena hands out strings copied into b, whose capacity (never exceeded,
// so b never moves) is the total of what is kept.
type arena struct{ b []byte }

func (a *arena) keep(s string) string {
	if s == "" {
		return ""
	}
	start := len(a.b)
	a.b = append(a.b, s...)
	return unsafe.String(&a.b[start], len(s))
}
