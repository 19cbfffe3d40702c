package batch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// ReadRows reads the complete rows of an output file, the first of any
// duplicates (a row is sampled once, but a hand-joined file may repeat
// one), skipping a torn last line the way a resumed run cuts it off.
func ReadRows(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	seen := map[key]bool{}
	var out []Row
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil { // io.EOF: b is a torn tail or empty
			break
		}
		var r Row
		if err := json.Unmarshal(b, &r); err != nil || r.Model == "" || r.PromptID == "" {
			return nil, fmt.Errorf("%s line %d is not a result row", path, line)
		}
		if !seen[r.key()] {
			seen[r.key()] = true
			out = append(out, r)
		}
	}
	return out, nil
}
