package ops

import (
	"io"
	"strconv"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// WriteCheckpointListJSON writes `checkpoint list`'s JSON to w, laid out
// directly: byte for byte what render.WriteJSON with Indent writes for the
// object of run_id (when set) and checkpoints (CheckpointJSON of each), as
// checkpoint_listjson_test.go checks. With 10,000 checkpoints, building and
// encoding those generic objects (boxed values, formatted times) took more
// CPU than fetching the pages.
func WriteCheckpointListJSON(w io.Writer, runID string, cps []tinkerapi.Checkpoint) error {
	const flushAt = 60 << 10
	b := make([]byte, 0, flushAt+4<<10)
	b = append(b, "{\n"...)
	if runID != "" {
		b = append(b, `  "run_id": `...)
		b = append(render.AppendJSONString(b, runID), ",\n"...)
	}
	b = append(b, `  "checkpoints": [`...)
	for i := range cps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCheckpointJSON(b, &cps[i])
		if len(b) >= flushAt {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	if len(cps) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "]\n}\n"...)
	_, err := w.Write(b)
	return err
}

// appendCheckpointJSON appends CheckpointJSON(c) at the listing's depth.
func appendCheckpointJSON(b []byte, c *tinkerapi.Checkpoint) []byte {
	b = append(b, "\n    {\n      \"checkpoint_id\": "...)
	b = render.AppendJSONString(b, c.CheckpointID)
	b = append(b, ",\n      \"checkpoint_type\": "...)
	b = render.AppendJSONString(b, c.CheckpointType)
	b = append(b, ",\n      \"time\": \""...)
	b = render.AppendPyTime(b, c.Time)
	b = append(b, "\",\n      \"tinker_path\": "...)
	b = render.AppendJSONString(b, c.TinkerPath)
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
	b = render.AppendPyTime(b, *c.ExpiresAt)
	return append(b, "\"\n    }"...)
}
