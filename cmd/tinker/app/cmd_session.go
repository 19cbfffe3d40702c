package app

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
)

// tinker session export-trace, as the official CLI has it (docs/compat.md,
// "Other differences" lists where it differs).

var sessionCmd = &command{
	Name:    "session",
	Summary: "Manage sessions.",
	Help:    "Manage sessions.",
	Sub: []*command{
		{
			Name:    "export-trace",
			Summary: "Export a session's Perfetto trace.",
			Args:    []argSpec{{Name: "SESSION_ID"}},
			Flags: []flagSpec{
				{Long: "--output", Short: "-o", Kind: flagPath, Metavar: "PATH", Help: "Output file (default: ./<SESSION_ID>.pftrace)."},
				{Long: "--url-only", Kind: flagBool, Help: "Print the signed download URL instead of downloading."},
			},
			API: sessionExportTrace,
		},
	},
}

func sessionExportTrace(r *apiRun) error {
	id := r.args[0]
	c, err := r.preflight()
	if err != nil {
		return err
	}
	if !r.jsonMode() {
		fmt.Fprintf(r.io.Err, "Exporting trace for session %s (this may take a while)...\n", id)
	}
	url, err := ops.TraceURL(r.ctx, c, id, func() {
		fmt.Fprintf(r.io.Err, "Building trace export for session: %s (this may take a while)\n", id)
	})
	if err != nil {
		return err
	}
	if r.has("url-only") {
		if r.jsonMode() {
			return r.writeJSON(render.Object{{Key: "session_id", Value: id}, {Key: "url", Value: url}})
		}
		_, err := fmt.Fprintln(r.io.Out, url)
		return err
	}
	dest, err := ops.TraceDestination(id, r.str("output"))
	if err != nil {
		return unexpected(err)
	}
	bar := r.bar("Downloading trace", 0)
	n, err := ops.SaveTrace(r.ctx, url, dest, bar)
	bar.Finish()
	if err != nil {
		return err
	}
	return r.show(&ops.TraceResult{SessionID: id, Destination: dest, URL: url, Size: n})
}
