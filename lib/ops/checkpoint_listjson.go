package ops

import (
	"bufio"
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
	b := bufio.NewWriterSize(w, 64<<10)
	b.WriteString("{\n")
	if runID != "" {
		b.WriteString(`  "run_id": `)
		render.WriteJSONString(b, runID)
		b.WriteString(",\n")
	}
	b.WriteString(`  "checkpoints": [`)
	for i := range cps {
		if i > 0 {
			b.WriteByte(',')
		}
		writeCheckpointJSON(b, &cps[i])
	}
	if len(cps) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return b.Flush()
}

// writeCheckpointJSON writes CheckpointJSON(c) at the listing's depth.
func writeCheckpointJSON(b *bufio.Writer, c *tinkerapi.Checkpoint) {
	var scratch [48]byte
	b.WriteString("\n    {\n      \"checkpoint_id\": ")
	render.WriteJSONString(b, c.CheckpointID)
	b.WriteString(",\n      \"checkpoint_type\": ")
	render.WriteJSONString(b, c.CheckpointType)
	b.WriteString(",\n      \"time\": \"")
	b.Write(render.AppendPyTime(scratch[:0], c.Time))
	b.WriteString("\",\n      \"tinker_path\": ")
	render.WriteJSONString(b, c.TinkerPath)
	b.WriteString(",\n      \"size_bytes\": ")
	if c.SizeBytes == nil {
		b.WriteString("null")
	} else {
		b.Write(strconv.AppendInt(scratch[:0], *c.SizeBytes, 10))
	}
	b.WriteString(",\n      \"public\": ")
	b.WriteString(strconv.FormatBool(c.Public))
	b.WriteString(",\n      \"expires_at\": ")
	if c.ExpiresAt == nil {
		b.WriteString("null")
	} else {
		b.WriteByte('"')
		b.Write(render.AppendPyTime(scratch[:0], *c.ExpiresAt))
		b.WriteByte('"')
	}
	b.WriteString("\n    }")
}
