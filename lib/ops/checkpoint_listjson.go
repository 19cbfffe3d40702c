package ops

import (
	"io"
	"iter"
	"strconv"
	"unsafe"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// WriteCheckpointListJSON writes `checkpoint list`'s JSON to w, laid out
// directly: byte for byte what render.WriteJSON with Indent writes for the
// object of run_id (when set) and checkpoints (CheckpointJSON of each), as
// checkpoint_listjson_test.go checks. With 10,000 checkpoints, building and
// encoding those generic objects (boxed values, formatted times) took more
// CPU than fetching the pages.
func WriteCheckpointListJSON(w io.Writer, runID string, cps iter.Seq[*tinkerapi.Checkpoint]) error {
	const flushAt = 60 << 10
	b := make([]byte, 0, flushAt+4<<10)
	b = append(b, "{\n"...)
	if runID != "" {
		b = append(b, `  "run_id": `...)
		b = append(render.AppendJSONString(b, runID), ",\n"...)
	}
	b = append(b, `  "checkpoints": [`...)
	var times render.PyTimes
	some := false
	for c := range cps {
		if some {
			b = append(b, ',')
		}
		some = true
		b = appendCheckpointJSON(b, c, &times)
		if len(b) >= flushAt {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	if some {
		b = append(b, "\n  "...)
	}
	b = append(b, "]\n}\n"...)
	_, err := w.Write(b)
	return err
}

// appendCheckpointJSON appends CheckpointJSON(c) at the listing's depth.
// The path is scanned once: an ID that is its tail (as the decoder leaves
// it) is plain ASCII when the path is, and a type that is one of the two
// known ones is.
func appendCheckpointJSON(b []byte, c *tinkerapi.Checkpoint, times *render.PyTimes) []byte {
	pathPlain := render.PlainASCII(c.TinkerPath)
	b = append(b, "\n    {\n      \"checkpoint_id\": "...)
	b = appendKnownPlain(b, c.CheckpointID, pathPlain && isTail(c.CheckpointID, c.TinkerPath))
	b = append(b, ",\n      \"checkpoint_type\": "...)
	b = appendKnownPlain(b, c.CheckpointType, c.CheckpointType == "training" || c.CheckpointType == "sampler")
	b = append(b, ",\n      \"time\": \""...)
	b = times.Append(b, c.Time)
	b = append(b, "\",\n      \"tinker_path\": "...)
	b = appendKnownPlain(b, c.TinkerPath, pathPlain)
	b = append(b, ",\n      \"size_bytes\": "...)
	if c.SizeBytes == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *c.SizeBytes, 10)
	}
	b = append(b, ",\n      \"public\": "...)
	b = strconv.AppendBool(b, c.Public)
	b = append(b, ",\n      \"expires_at\": "...)
	if c.ExpiresAt == nil {
		return append(b, "null\n    }"...)
	}
	b = append(b, '"')
	b = times.Append(b, *c.ExpiresAt)
	return append(b, "\"\n    }"...)
}

// appendKnownPlain appends s as a JSON string, quoting it as it stands
// when plain says it needs no escapes.
func appendKnownPlain(b []byte, s string, plain bool) []byte {
	if !plain {
		return render.AppendJSONString(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// isTail reports whether s is the tail of t in memory, not only in value.
func isTail(s, t string) bool {
	return len(s) <= len(t) && len(s) > 0 &&
		unsafe.StringData(s) == unsafe.StringData(t[len(t)-len(s):])
}
