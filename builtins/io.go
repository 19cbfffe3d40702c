package builtins

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	starlarkjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/userfile"
)

// The io module is a script's only access to files: read and write text and
// JSON Lines, and test for existence. Paths are relative to the working
// directory. Writes are atomic (a reader sees the old file or the new one),
// and reads are bounded so a stray multi-gigabyte file fails with a message
// instead of exhausting memory.
// ioBuiltins are the builtins io.go defines (registryParts lists them).
var ioBuiltins = []entry{
	{docEntry{
		Name:      "io.read_jsonl",
		Signature: "io.read_jsonl(path)",
		Summary:   "Read a JSON Lines file into a list of values (blank lines are skipped).",
		Details:   "A line that is not JSON fails with path:LINE and what is wrong.",
		Example:   "io.write_jsonl(\"qa.jsonl\", [{\"q\": \"2+2\", \"a\": \"4\"}])\nio.read_jsonl(\"qa.jsonl\")[0][\"a\"]",
	}, ioReadJSONL},
	{docEntry{
		Name:      "io.write_jsonl",
		Signature: "io.write_jsonl(path, rows)",
		Summary:   "Write a list of values as JSON Lines, one per line, replacing the file atomically.",
		Details:   "A device, a FIFO or /dev/stdout is written to, never replaced; a file keeps its permissions.",
		Example:   "io.write_jsonl(\"rows.jsonl\", [{\"n\": i} for i in range(3)])",
	}, ioWriteJSONL},
	{docEntry{
		Name:      "io.read_text",
		Signature: "io.read_text(path)",
		Summary:   "Read a UTF-8 text file into a string.",
		Details:   "At most 1 GiB from a file, 64 MiB from a FIFO or device; Ctrl-C ends a wait on a FIFO.",
		Example:   "io.write_text(\"note.txt\", \"hello\\n\")\nio.read_text(\"note.txt\").strip()",
	}, ioReadText},
	{docEntry{
		Name:      "io.write_text",
		Signature: "io.write_text(path, text)",
		Summary:   "Write a string to a file, replacing it atomically.",
		Details:   "A device, a FIFO or /dev/stdout is written to, never replaced; a file keeps its permissions.",
		Example:   "io.write_text(\"prompts.txt\", \"\\n\".join([\"Hello\", \"Bonjour\"]) + \"\\n\")",
	}, ioWriteText},
	{docEntry{
		Name:      "io.exists",
		Signature: "io.exists(path)",
		Summary:   "Report whether a file or directory exists.",
		Example:   "io.exists(\"data.jsonl\")",
	}, ioExists},
}

// maxReadBytes bounds what io reads into memory at once.
const maxReadBytes = 1 << 30

func ioPath(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (string, error) {
	var path string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &path); err != nil {
		return "", err
	}
	if path == "" {
		return "", fmt.Errorf("%s: path is empty: give a file name", b.Name())
	}
	return path, nil
}

// readBounded reads a whole file, refusing one larger than maxReadBytes
// before allocating for it; a FIFO or device is read up to
// userfile.SpecialLimit, and a wait for a FIFO's writer ends on Ctrl-C.
func readBounded(thread *starlark.Thread, name, path string) ([]byte, error) {
	b, err := userfile.ReadAny(ContextOf(thread), path, maxReadBytes)
	if errors.Is(err, userfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: %s holds more than io reads at once (%s from a file, %s from a FIFO or device)",
			name, path, render.Size(maxReadBytes), render.Size(userfile.SpecialLimit))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, ioError(err))
	}
	return b, nil
}

// ioError shortens the common file errors to what a person acts on.
func ioError(err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe):
		return fmt.Errorf("%s: no such file", pe.Path)
	case errors.Is(err, fs.ErrPermission) && errors.As(err, &pe):
		return fmt.Errorf("%s: permission denied", pe.Path)
	}
	return err
}

func ioReadText(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	path, err := ioPath(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(thread, b.Name(), path)
	if err != nil {
		return nil, err
	}
	return starlark.String(data), nil
}

func ioExists(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	path, err := ioPath(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	_, err = os.Stat(path)
	return starlark.Bool(err == nil), nil
}

func ioWriteText(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var path, text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &path, "text", &text); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%s: path is empty: give a file name", b.Name())
	}
	return starlark.None, writeAtomic(b.Name(), path, []byte(text))
}

func ioReadJSONL(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	path, err := ioPath(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(thread, b.Name(), path)
	if err != nil {
		return nil, err
	}
	return decodeJSONL(thread, path, data)
}

// decodeJSONL decodes each non-blank line with Starlark's json.decode, so
// values come out as the json module gives them (dicts, lists, ints, ...).
func decodeJSONL(thread *starlark.Thread, path string, data []byte) (*starlark.List, error) {
	decode := starlarkjson.Module.Members["decode"]
	var rows []starlark.Value
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		v, err := starlark.Call(thread, decode, starlark.Tuple{starlark.String(line)}, nil)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "json.decode: ")
			return nil, fmt.Errorf("%s:%d: not a JSON value (%s)", path, n, msg)
		}
		rows = append(rows, v)
	}
	return starlark.NewList(rows), nil
}

func ioWriteJSONL(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var path string
	var rows starlark.Iterable
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &path, "rows", &rows); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%s: path is empty: give a file name", b.Name())
	}
	encode := jsonModule().Members["encode"]
	var buf bytes.Buffer
	iter := rows.Iterate()
	defer iter.Done()
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		v, err := starlark.Call(thread, encode, starlark.Tuple{x}, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %s", b.Name(), i, strings.TrimPrefix(err.Error(), "json.encode: "))
		}
		buf.WriteString(string(v.(starlark.String)))
		buf.WriteByte('\n')
	}
	return starlark.None, writeAtomic(b.Name(), path, buf.Bytes())
}

// writeAtomic replaces path with data, naming the missing directory rather
// than the temporary file when the parent does not exist.
func writeAtomic(name, path string, data []byte) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: cannot write %s: directory %s does not exist", name, path, dir)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
